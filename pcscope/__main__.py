from pcscope.cli.main import main

raise SystemExit(main())
