"""One input value from the command line to the index and the explorer: a command given
only the profile reuses the newest current index of it, the store answers 'is it current'
without building, and `open --mca` reaches the index."""

from __future__ import annotations

import json

from tui_data import write_inputs

from pcscope.cli.cmd_open import request_of
from pcscope.cli.main import build_parser, main
from pcscope.core.inputs import Inputs
from pcscope.index.store import IndexStore, open_workload


def test_try_open_builds_nothing_and_is_current_follows_the_files(tmp_path):
    given = write_inputs(tmp_path / "in")
    inputs = Inputs(given.profile, given.alp)
    store = IndexStore.at(tmp_path / "idx")
    assert store.try_open(inputs) is None and not store.is_current(inputs)
    assert not (tmp_path / "idx").exists()  # no temp build folder was made to find that out
    store.open(inputs)
    assert store.is_current(inputs)
    assert store.try_open(inputs).alp is not None
    given.alp.write_text(given.alp.read_text() + "\n")
    assert not store.is_current(inputs) and store.try_open(inputs) is None


def test_latest_for_is_the_newest_current_index_of_the_profile(tmp_path):
    given = write_inputs(tmp_path / "in")
    idx = tmp_path / "idx"
    store = IndexStore.at(idx)
    assert store.latest_for(Inputs(given.profile)) is None
    open_workload(given.profile, alp=given.alp, index_dir=idx)
    open_workload(given.profile, alp=given.alp, guides=[given.guide], index_dir=idx)
    latest = store.latest_for(Inputs(given.profile))
    assert latest == Inputs(given.profile.resolve(), given.alp.resolve(),
                            (given.guide.resolve(),))
    # Other reader options are another index; a changed guide makes that one stale.
    assert store.latest_for(Inputs(given.profile, merge_duplicates=True)) is None
    given.guide.write_text(given.guide.read_text() + "\nmore\n")
    assert store.latest_for(Inputs(given.profile)) == Inputs(given.profile.resolve(),
                                                             given.alp.resolve())


def test_a_command_given_only_the_profile_uses_the_index_with_its_alp(tmp_path, capsys):
    given = write_inputs(tmp_path / "in")
    idx = ["--index-dir", str(tmp_path / "idx")]
    assert main(["index", str(given.profile), "--alp", str(given.alp), *idx]) == 0
    capsys.readouterr()
    assert main(["show", str(given.profile), "0x2004", "--json", *idx]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["alp"] is not None  # the ALP came with the reused index
    assert err == f"pcscope: using the index of {given.profile.resolve()} " \
                  f"--alp {given.alp.resolve()}\n"
    assert len(list((tmp_path / "idx").iterdir())) == 1  # no second index was built


def test_without_an_earlier_index_only_the_profile_is_indexed(tmp_path, capsys):
    given = write_inputs(tmp_path / "in")
    assert main(["show", str(given.profile), "0x2004", "--json",
                 "--index-dir", str(tmp_path / "idx")]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["alp"] is None and err == ""


def test_open_carries_mca_and_the_preset_guides(tmp_path):
    given = write_inputs(tmp_path / "in")
    mca = tmp_path / "in" / "mca.json"
    mca.write_text("{}")
    args = build_parser().parse_args(["open", str(given.profile), "--alp", str(given.alp),
                                      "--mca", str(mca), "--index-dir", str(tmp_path / "idx")])
    request = request_of(args)
    assert request.inputs.mca == mca and request.inputs.alp == given.alp
    assert request.inputs.guides  # the preset's (else the bundled) guides, as analyze uses
