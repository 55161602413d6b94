"""/proc/cpuinfo's fields (tilewise.cpuinfo): the first value of a name, '' when absent."""

from tilewise import cpuinfo

SAMPLE = ("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n"
          "flags\t\t: fpu avx2 avx512f\n\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\n")


def test_the_first_value_of_a_field():
    assert cpuinfo.field("vendor_id", SAMPLE) == "GenuineIntel"
    assert cpuinfo.field("model name", SAMPLE) == "Intel(R) Xeon(R) Processor"
    assert cpuinfo.field("flags", SAMPLE).split() == ["fpu", "avx2", "avx512f"]


def test_absent_fields_and_prefixes_read_empty():
    assert cpuinfo.field("cpu MHz", SAMPLE) == ""
    assert cpuinfo.field("model", SAMPLE) == ""  # not "model name"
    assert cpuinfo.field("vendor_id", "") == ""


def test_an_unreadable_file_reads_empty(monkeypatch, tmp_path):
    monkeypatch.setattr(cpuinfo, "CPUINFO", tmp_path / "missing")
    assert cpuinfo.text() == "" and cpuinfo.field("vendor_id") == ""
