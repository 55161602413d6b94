"""Spec validation: one test per rule; each error names the file, the key path and what is allowed."""

import copy

import pytest
import yaml

from tilewise.arch.loader import (arch_from_dict, arch_to_dict, load_arch, load_file, parse_arch,
                                   validate_arch)
from tilewise.arch.spec import Arch, Level
from tilewise.errors import SpecError

BASE = {
    "name": "tiny",
    "levels": [
        {"name": "dram", "capacity": "unbounded"},
        {"name": "sram", "capacity": "256 KiB", "instances": 2, "bandwidth": "16 GB/s"},
        {"name": "core", "capacity": "32 KiB", "instances": 8, "banks": 4, "bank_granular": True,
         "read_bandwidth": "8 B/cycle", "write_bandwidth": "4 B/cycle", "channels": 2},
    ],
    "array": {"level": "core", "rows": 4, "cols": 2},
    "compute": {"clock": "1.25 GHz", "macs_per_cycle": {"int8": 64, "bf16": 32}},
    "alignment": {"m": 8, "n": 8},
}


def spec_file(tmp_path, edit=None, text=None):
    data = copy.deepcopy(BASE)
    if edit:
        edit(data)
    path = tmp_path / "bad.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(data, sort_keys=False))
    return path


def error_of(tmp_path, edit=None, text=None) -> str:
    with pytest.raises(SpecError) as info:
        load_arch(spec_file(tmp_path, edit, text))
    message = str(info.value)
    assert "\n" not in message and message.startswith("bad.yaml")
    return message


def test_base_spec_loads(tmp_path):
    arch = load_arch(spec_file(tmp_path))
    core = arch.level("core")
    assert (core.bank_bytes, core.read_bandwidth, core.write_bandwidth) == (8192, 10e9, 5e9)
    assert dict(arch.compute.macs_per_cycle) == {"i8": 64, "bf16": 32}  # canonical dtype names
    assert arch.array.broadcast_rows and arch.array.broadcast_cols and not arch.array.reduce_cols
    assert arch.level("sram").double_buffer and arch.level("dram").read_bandwidth == 0


def test_unknown_key_suggests_the_closest(tmp_path):
    msg = error_of(tmp_path, lambda d: d["levels"][1].update(capcity="1 KiB"))
    assert msg.startswith("bad.yaml: levels[1]: unknown key 'capcity'; did you mean 'capacity'? "
                          "valid keys: name, capacity, instances, banks")


@pytest.mark.parametrize("section, key, expected", [
    (None, "level", "(top level): unknown key 'level'; did you mean 'levels'? valid keys: name,"),
    ("array", "broadcats", "array: unknown key 'broadcats'; did you mean 'broadcast'?"),
    ("compute", "zzz", "compute: unknown key 'zzz'; valid keys: clock, macs_per_cycle"),
])
def test_unknown_key_in_each_section(tmp_path, section, key, expected):
    msg = error_of(tmp_path, lambda d: (d[section] if section else d).update({key: 1}))
    assert expected in msg


def test_missing_required_key(tmp_path):
    msg = error_of(tmp_path, lambda d: d["levels"][1].pop("capacity"))
    assert "levels[1]: missing required key 'capacity'; required keys: name, capacity" in msg
    msg = error_of(tmp_path, lambda d: d.pop("compute"))
    assert "(top level): missing required key 'compute'; required keys: name, levels, compute" in msg


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d["levels"][1].update(instances=0), "levels[1].instances: 0 is not valid; expected a positive integer"),
    (lambda d: d["levels"][1].update(instances=2.5), "levels[1].instances: 2.5 is not valid"),
    (lambda d: d["levels"][1].update(instances=True), "levels[1].instances: True is not valid"),
    (lambda d: d["levels"][1].update(channels=-1), "levels[1].channels: -1 is not valid"),
    (lambda d: d["levels"][1].update(double_buffer="yes please"), "levels[1].double_buffer: 'yes please' is not valid; expected true or false"),
    (lambda d: d["array"].update(rows=0), "array.rows: 0 is not valid; expected a positive integer"),
    (lambda d: d.update(levels={"a": 1}), "levels: expected a non-empty list of levels, outermost first"),
    (lambda d: d.update(levels=[]), "levels: expected a non-empty list of levels"),
    (lambda d: d["compute"].update(macs_per_cycle=[64]), "compute.macs_per_cycle: expected a mapping dtype -> count per cycle"),
    (lambda d: d.update(name=""), "name: '' is not valid; expected a name"),
])
def test_wrong_type_or_non_positive(tmp_path, edit, expected):
    assert expected in error_of(tmp_path, edit)


@pytest.mark.parametrize("key, value, expected", [
    ("capacity", "-4 KiB", "levels[1].capacity: size '-4 KiB' is not a positive whole number of bytes"),
    ("capacity", 0, "levels[1].capacity: size 0 is not a positive whole number of bytes"),
    ("capacity", "256 KB", "levels[1].capacity: ambiguous unit 'KB': write 'KiB' (1024 bytes) or 'kB'"),
    ("capacity", "256 kiB", "levels[1].capacity: unknown size unit 'kiB' in '256 kiB'; allowed: B, KiB"),
    ("bandwidth", "16 GB", "levels[1].bandwidth: unknown bandwidth unit 'GB' in '16 GB'; allowed: B/s"),
    ("bandwidth", 0, "levels[1].bandwidth: bandwidth 0 must be positive"),
])
def test_bad_quantities(tmp_path, key, value, expected):
    assert expected in error_of(tmp_path, lambda d: d["levels"][1].update({key: value}))


def test_bad_clock(tmp_path):
    msg = error_of(tmp_path, lambda d: d["compute"].update(clock="1 Ghz"))
    assert "compute.clock: unknown frequency unit 'Ghz' in '1 Ghz'; allowed: Hz, kHz, MHz, GHz" in msg


def test_level_names_unique(tmp_path):
    msg = error_of(tmp_path, lambda d: d["levels"][2].update(name="sram"))
    assert "levels[2].name: level name 'sram' is already used by levels[1]; level names must be unique" in msg


def test_array_level_must_be_a_level(tmp_path):
    msg = error_of(tmp_path, lambda d: d["array"].update(level="cores"))
    assert "array.level: 'cores' is not a level name; did you mean 'core'? levels: dram, sram, core" in msg


def test_array_level_not_outermost(tmp_path):
    msg = error_of(tmp_path, lambda d: (d["array"].update(level="dram", rows=1, cols=1)))
    assert "array.level: 'dram' is the outermost level" in msg and "pick one of: sram, core" in msg


def test_array_instances_equal_rows_times_cols(tmp_path):
    msg = error_of(tmp_path, lambda d: d["array"].update(cols=3))
    assert "array: rows × cols = 4 × 3 = 12 but level 'core' has instances: 8; they must be equal" in msg


def test_broadcast_axes(tmp_path):
    msg = error_of(tmp_path, lambda d: d["array"].update(broadcast=["row"]))
    assert "array.broadcast: ['row'] is not valid; expected a list of axes from ['rows', 'cols']" in msg
    msg = error_of(tmp_path, lambda d: d["array"].update(broadcast=["rows", "rows"]))
    assert "array.broadcast: ['rows', 'rows'] names an axis twice" in msg


def test_capacity_must_equal_banks_times_bank_size(tmp_path):
    msg = error_of(tmp_path, lambda d: d["levels"][2].update(bank_size="4 KiB"))
    assert ("levels[2].capacity: capacity 32 KiB (32768 B) != banks × bank_size = 4 × 4 KiB = "
            "16384 B; make them agree") in msg


def test_capacity_divisible_into_banks(tmp_path):
    msg = error_of(tmp_path, lambda d: d["levels"][2].update(banks=3))
    assert "levels[2].banks: capacity 32768 B is not divisible into 3 equal banks" in msg
    msg = error_of(tmp_path, lambda d: (d["levels"][2].pop("banks"),
                                        d["levels"][2].update(bank_size="5 KiB")))
    assert "levels[2].bank_size: capacity 32768 B is not a multiple of bank_size 5120 B" in msg


def test_bank_granular_needs_banks(tmp_path):
    msg = error_of(tmp_path, lambda d: d["levels"][2].pop("banks"))
    assert "levels[2].bank_granular: level 'core' is bank_granular but has no bank size; give 'banks'" in msg


def test_capacity_multiple_of_block(tmp_path):
    msg = error_of(tmp_path, lambda d: d["levels"][1].update(block="96 B"))
    assert "levels[1].capacity: 262144 B is not a multiple of block 96 B" in msg


def test_inner_level_unbounded(tmp_path):
    msg = error_of(tmp_path, lambda d: d["levels"][1].update(capacity="unbounded"))
    assert ("levels[1].capacity: level 'sram' is unbounded, which only the outermost level "
            "(levels[0]) may be") in msg


def test_outermost_level_bounded_is_ok(tmp_path):
    arch = load_arch(spec_file(tmp_path, lambda d: d["levels"][0].update(capacity="4 GiB")))
    assert arch.levels[0].capacity_bytes == 4 * 2**30


def test_unbounded_level_has_no_banks(tmp_path):
    msg = error_of(tmp_path, lambda d: d["levels"][0].update(banks=2))
    assert "levels[0]: an unbounded level has no banks" in msg


def test_outermost_level_has_no_bandwidth(tmp_path):
    msg = error_of(tmp_path, lambda d: d["levels"][0].update(bandwidth="1 GB/s"))
    assert "levels[0].bandwidth: level 'dram' is the outermost level: it has no parent link" in msg


def test_inner_level_needs_bandwidth(tmp_path):
    msg = error_of(tmp_path, lambda d: d["levels"][1].pop("bandwidth"))
    assert "levels[1]: level 'sram' needs the bandwidth of its link to the parent level" in msg
    msg = error_of(tmp_path, lambda d: d["levels"][2].pop("write_bandwidth"))
    assert "levels[2]: level 'core' needs the bandwidth" in msg


def test_bandwidth_and_read_write_together(tmp_path):
    msg = error_of(tmp_path, lambda d: d["levels"][2].update(bandwidth="1 GB/s"))
    assert "levels[2]: give either 'bandwidth' (both directions) or 'read_bandwidth' and" in msg


def test_instances_form_a_tree(tmp_path):
    msg = error_of(tmp_path, lambda d: d["levels"][1].update(instances=3))
    assert ("levels[2].instances: 8 is not a multiple of the parent level 'sram''s 3 instances"
            in msg)


def test_unknown_dtype_in_macs(tmp_path):
    msg = error_of(tmp_path, lambda d: d["compute"]["macs_per_cycle"].update(fp8=512))
    assert "compute.macs_per_cycle: unknown dtype 'fp8'; valid: bool, i4, i8" in msg


def test_dtype_given_twice(tmp_path):
    msg = error_of(tmp_path, lambda d: d["compute"]["macs_per_cycle"].update(i8=64))
    assert "compute.macs_per_cycle: dtype 'i8' given twice (as 'i8' too)" in msg


def test_rate_must_be_positive(tmp_path):
    msg = error_of(tmp_path, lambda d: d["compute"]["macs_per_cycle"].update(bf16=0))
    assert "compute.macs_per_cycle.bf16: 0 is not valid; expected a positive integer count" in msg


def test_alignment_values_and_names(tmp_path):
    msg = error_of(tmp_path, lambda d: d["alignment"].update(k=0))
    assert "alignment.k: 0 is not valid; expected a positive multiple in elements" in msg
    msg = error_of(tmp_path, text=yaml.safe_dump(BASE, sort_keys=False).replace("m: 8", "on: 8"))
    assert "alignment: True is not a dim name" in msg and "quote names such as 'on'" in msg


def test_alignment_per_dtype(tmp_path):
    arch = load_arch(spec_file(tmp_path, lambda d: d["alignment"].update(
        c_in={"int8": 8, "default": 16})))
    assert dict(arch.alignment["c_in"]) == {"i8": 8, "default": 16}
    assert arch_from_dict(arch_to_dict(arch)) == arch
    msg = error_of(tmp_path, lambda d: d["alignment"].update(k={"i7": 8}))
    assert "alignment.k: unknown dtype 'i7'" in msg and "or 'default' for every other" in msg
    msg = error_of(tmp_path, lambda d: d["alignment"].update(k={"i8": 0}))
    assert "alignment.k.i8: 0 is not valid; expected a positive multiple in elements" in msg
    msg = error_of(tmp_path, lambda d: d["alignment"].update(k={"i8": 8, "int8": 4}))
    assert "alignment.k: dtype 'i8' given twice (as 'int8' too)" in msg
    msg = error_of(tmp_path, lambda d: d["alignment"].update(k={}))
    assert "alignment.k: expected a mapping dtype -> multiple" in msg


def test_energy(tmp_path):
    arch = load_arch(spec_file(tmp_path, lambda d: (d["levels"][1].update(energy_per_byte="2 pJ/B"),
                                                    d["compute"].update(energy_per_mac=0.25))))
    assert arch.level("sram").energy_pj_per_byte == 2.0 and arch.compute.energy_pj_per_mac == 0.25
    assert arch_from_dict(arch_to_dict(arch)) == arch
    msg = error_of(tmp_path, lambda d: d["compute"].update(energy_per_mac="-1 pJ"))
    assert "compute.energy_per_mac: energy '-1 pJ' must not be negative" in msg


def test_yaml_syntax_error_names_line_and_column(tmp_path):
    msg = error_of(tmp_path, text="name: x\nlevels: [\n  {name: a, capacity: 1 KiB\ncompute: {}\n")
    assert msg.startswith("bad.yaml:4:8: YAML syntax error:")


def test_duplicate_key_is_an_error(tmp_path):
    msg = error_of(tmp_path, text="name: x\nname: y\n")
    assert msg.startswith("bad.yaml:2:1: YAML syntax error:") and "duplicate key 'name' (first at line 1)" in msg


def test_empty_and_non_mapping_files(tmp_path):
    assert "bad.yaml: empty spec; expected a mapping with keys name" in error_of(tmp_path, text="")
    assert "bad.yaml: (top level): expected a mapping with keys name" in error_of(tmp_path, text="- 1\n")


def test_missing_file_names_it(tmp_path):
    with pytest.raises(SpecError, match=r"cannot read architecture file '.*nope.yaml'"):
        load_file(tmp_path / "nope.yaml")


def test_validate_arch_catches_programmatic_mistakes():
    arch = load_arch("aie-4x2")
    bad = Arch(arch.name, arch.levels + (Level("core", 1024, instances=8, read_bandwidth=1.0,
                                                write_bandwidth=1.0),), arch.compute, arch.array)
    with pytest.raises(SpecError, match=r"<arch>: levels\[3\].name: level name 'core' is already "
                                        r"used by levels\[2\]"):
        validate_arch(bad)


def test_parse_arch_from_text_keeps_comments():
    arch = parse_arch("name: t  # a name\nlevels:\n  - {name: m, capacity: unbounded}\n"
                      "  - name: s\n    capacity: 1 KiB   # datasheet p. 3\n"
                      "                      # (continued)\n    bandwidth: 1 GB/s\n"
                      "compute: {clock: 1 GHz}  # assumption\n", "t.yaml")
    assert arch.sources["levels[1].capacity"] == "datasheet p. 3 (continued)"
    assert arch.sources["compute"] == "assumption" and "levels[1].bandwidth" not in arch.sources


def _holding(data):
    data["levels"][2].update(holds=["in2", "out"], capacity={"in2": "8 KiB", "out": "8 KiB",
                                                             "default": "16 KiB"})
    data["levels"][1]["holds"] = ["A", "C"]


def test_holds_and_reserved_bytes_load_and_round_trip(tmp_path):
    from tilewise.arch.loader import arch_to_yaml

    arch = load_arch(spec_file(tmp_path, _holding))
    core = arch.level("core")
    assert core.holds == ("in2", "out") and core.capacity_bytes == 32 * 1024
    assert core.reserved == (("in2", 8192), ("out", 8192)) and core.shared_bytes == 16384
    assert arch.level("sram").holds == ("A", "C") and arch.level("dram").holds is None
    assert parse_arch(arch_to_yaml(arch)) == arch
    assert arch_from_dict(arch_to_dict(arch)) == arch


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d["levels"][0].update(holds=["A"]),
     "levels[0].holds: the outermost level holds every tensor"),
    (lambda d: d["levels"][1].update(holds=[]), "levels[1].holds: [] is not valid; expected a "
     "non-empty list of tensor names or roles (in1, in2, in3, out)"),
    (lambda d: d["levels"][1].update(holds=["A", "A"]), "levels[1].holds: ['A', 'A'] names a "
     "tensor twice"),
    (lambda d: d["levels"][1].update(holds=["A"], capacity={"B": "1 KiB", "default": "1 KiB"}),
     "levels[1].capacity.B: 'B' is not held by this level; holds: A"),
    (lambda d: d["levels"][1].update(holds=["A", "C"], capacity={"A": "1 KiB"}),
     "levels[1].capacity: no bytes left for C: give 'default: SIZE'"),
    (lambda d: d["levels"][1].update(capacity={"A": "1 KiB"}),
     "levels[1].capacity: no bytes left for every other tensor"),
])
def test_holds_errors(tmp_path, edit, expected):
    assert expected in error_of(tmp_path, edit)
