"""The generator's alternative variant (`pcscope sample --variant alt`): the same planted
issues and look-alikes, each cost shown through ALP fields the default variant leaves
alone. The offline analyst finds every planted issue of a small alt set, keeps the
look-alikes quiet and names the field it read; the alt set really carries each signal
outside the default field, so a rule reading one field fails here.

Seed 5 is this test's; the benchmark (bench/engine_bench.py ``variants``) uses held-out
seeds.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import pytest
from engine_helpers import generated, run

from pcscope.cli.main import main as pcscope_main
from pcscope.core.backends import rules as R
from pcscope.samples.generate import Options, generate

SEED = 5

# category -> what the claim of the planted issue must name: the field the alt set uses
ALT_FIELD = {
    "indirect-branch": "mispredicted / iterations",
    "branch-mispredict": "mispredicted / iterations",
    "dependent-load": "execute latency",
    "cache-miss": "execute latency",
    "tlb-miss": "execute latency",
    "store-forwarding": "no forwarding count",
    "atomic-llsc": "store-exclusive executions",
    "atomic-contention": "execute latency",
    "barrier": "execute latency",
    "division": "issue wait of its consumer",
    "spin-wait": "1 / (1 - taken rate)",
    "fp-dependency": "execute latency",
}


@pytest.fixture(scope="module")
def alt(tmp_path_factory):
    folder = tmp_path_factory.mktemp("alt")
    workload, truth = generated(folder, seed=SEED, variant="alt")
    result = run(workload, session=folder / "s.sqlite")
    with gzip.open(folder / f"planted-{SEED}-alt" / "alp.jsonl.gz", "rt") as f:
        records = defaultdict(list)
        for line in f:
            rec = json.loads(line)
            records[int(rec["pc"], 16)].append(rec)
    return truth, result, records


def test_every_planted_issue_of_the_alt_variant_is_found(alt):
    truth, result, _records = alt
    assert truth["variant"] == "alt"
    assert {i["category"] for i in truth["planted"]} == set(ALT_FIELD)
    for issue in truth["planted"]:
        pc = int(issue["pc"], 16)
        ideas = [i for i in result.ideas if i.category == issue["category"] and pc in i.pcs]
        assert ideas, issue
        assert ideas[0].basis == "measured"
        assert ALT_FIELD[issue["category"]] in ideas[0].claim, ideas[0].claim
        assert "Fields read: ALP" in ideas[0].claim


def test_alt_look_alikes_stay_quiet(alt):
    truth, result, _records = alt
    for twin in truth["lookalikes"]:
        kernel = {int(p, 16) for p in twin["pcs"]}
        assert not [i.id for i in result.ideas if kernel & set(i.pcs)], twin


def _sum(recs: list[dict], block: str, name: str) -> int | None:
    values = [r[block][name] for r in recs if name in r.get(block, {})]
    return sum(values) if values else None


def _wait(recs: list[dict]) -> float:
    return sum((r["stages"]["issue"] - r["stages"]["dispatch"]) * r["iterations"]
               for r in recs) / sum(r["iterations"] for r in recs)


def _at(records, pc: int, offset: int = 0) -> list[dict]:
    return records[pc + 4 * offset]


def test_the_alt_set_keeps_each_signal_out_of_the_default_field(alt):
    """What the default variant's field shows for each planted issue of the alt set:
    absent, or as healthy as a look-alike. A rule reading only that field misses it."""
    truth, _result, records = alt
    for issue in truth["planted"]:
        category, pc = issue["category"], int(issue["pc"], 16)
        recs = _at(records, pc)
        where = (category, issue["asm"])
        if category in ("indirect-branch", "branch-mispredict"):
            assert _sum(recs, "branch", "executed") is None, where
        elif category in ("dependent-load", "cache-miss", "tlb-miss"):
            assert _sum(recs, "mem", "l1d_miss") is None, where
            assert _sum(recs, "mem", "avg_latency") is None, where
        elif category == "store-forwarding":
            assert _sum(recs, "mem", "store_forwarded") is None, where
        elif category == "atomic-llsc":  # the status branch follows the store-exclusive
            assert _sum(_at(records, pc, 1), "branch", "taken") is None, where
            load = _at(records, pc, -2)
            assert _sum(load, "mem", "avg_latency") / len(load) < R.ATOMIC_LATENCY, where
        elif category == "atomic-contention":
            assert _sum(recs, "mem", "l1d_miss") / _sum(recs, "mem", "accesses") \
                < R.ATOMIC_MISS, where
            assert _sum(recs, "mem", "avg_latency") is None, where
        elif category == "barrier":
            assert _wait(recs) < R.ORDER_WAIT, where
        elif category == "division":
            assert all("complete" not in r["stages"] for r in recs), where
        elif category == "spin-wait":  # the poll load runs once per (own-loop) iteration
            load = next(r for r in issue["pcs"] if "mem" in records[int(r, 16)][0])
            recs = records[int(load, 16)]
            per = _sum(recs, "mem", "accesses") / sum(r["iterations"] for r in recs)
            assert per < R.SPIN_POLLS, where
        elif category == "fp-dependency":
            assert _wait(recs) < R.FP_CHAIN_WAIT, where
        else:
            raise AssertionError(f"no default field named for {category}")


def test_alt_records_keep_the_format(alt):
    """Counts stay within their totals and stages in order, whatever a record leaves out."""
    _truth, _result, records = alt
    for recs in records.values():
        for rec in recs:
            stages = list(rec["stages"].values())
            assert stages == sorted(stages)
            b, m = rec.get("branch", {}), rec.get("mem", {})
            if "executed" in b:
                assert b.get("taken", 0) <= b["executed"] and b["mispredicted"] <= b["executed"]
            if m:
                assert m.get("llc_miss", 0) <= m.get("l2_miss", 0) <= m["accesses"]


def _planted(folder) -> list[tuple[str, str, str]]:
    truth = json.loads((folder / "truth.json").read_text())
    return [(e["category"], e["window"], e["pc"]) for e in truth["planted"] + truth["lookalikes"]]


def test_the_variant_is_an_option_and_the_default_is_unchanged(tmp_path):
    default = generate(Options("planted", SEED, tmp_path / "d", windows=130))
    again = generate(Options("planted", SEED, tmp_path / "e", windows=130,
                             variant="default"))
    other = generate(Options("planted", SEED, tmp_path / "a", windows=130, variant="alt"))
    for name in ("profile.csv.gz", "alp.jsonl.gz", "truth.json"):
        assert (default.out / name).read_bytes() == (again.out / name).read_bytes()
    # the same issues in the same windows, shown through other ALP fields
    assert _planted(default.out) == _planted(other.out)
    assert (default.out / "alp.jsonl.gz").read_bytes() != \
        (other.out / "alp.jsonl.gz").read_bytes()
    assert "variant" not in json.loads((default.out / "truth.json").read_text())
    assert "--variant alt" in (other.out / "README.md").read_text()


def test_cli_takes_the_variant_and_refuses_an_unknown_one(tmp_path, capsys):
    out = tmp_path / "s"
    assert pcscope_main(["sample", "--kind", "A", "--windows", "80", "--variant", "alt",
                         "-o", str(out)]) == 0
    assert json.loads((out / "truth.json").read_text())["variant"] == "alt"
    capsys.readouterr()
    assert pcscope_main(["sample", "--variant", "other", "-o", str(tmp_path / "t")]) == 2
    assert capsys.readouterr().err.startswith(
        "pcscope: error: argument --variant: invalid choice: 'other'")
