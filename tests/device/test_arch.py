"""Arch facts: the table is complete, cited, and SKU selection picks the right numbers."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from kloop.device.arch import (
    ArchFacts,
    UnknownArch,
    arch_from_device_name,
    canonical_arch,
    facts_for,
    known_archs,
)
from kloop.errors import BadInput

REQUIRED = ["sm_80", "sm_90", "sm_100", "gfx908", "gfx90a", "gfx942", "gfx950"]


def test_required_archs_are_covered() -> None:
    assert set(REQUIRED) <= set(known_archs())


@pytest.mark.parametrize("arch", REQUIRED)
def test_every_entry_is_cited_and_sane(arch: str) -> None:
    facts = facts_for(arch)
    assert isinstance(facts, ArchFacts)
    assert facts.sources and all(s.startswith("https://") for s in facts.sources)
    assert facts.matrix_instructions
    assert facts.warp_size == (32 if facts.vendor == "nvidia" else 64)
    assert facts.max_threads_per_unit >= facts.max_threads_per_block
    assert facts.max_shared_mem_per_block_bytes <= facts.shared_mem_per_unit_bytes
    # a peak HBM rate between 1 TB/s and 10 TB/s covers every listed datacenter part
    assert 1000 <= facts.peak_dram_gbs <= 10000


def test_lds_banks_differ_between_gfx942_and_gfx950() -> None:
    assert facts_for("gfx942").shared_mem_banks == 32
    assert facts_for("gfx950").shared_mem_banks == 64
    assert facts_for("gfx950").shared_mem_per_unit_bytes == 160 * 1024
    assert facts_for("gfx942").shared_mem_per_unit_bytes == 64 * 1024


def test_gfx950_has_the_f8f6f4_mfma_shapes() -> None:
    shapes = " ".join(facts_for("gfx950").matrix_instructions)
    assert "32x32x64_f8f6f4" in shapes and "16x16x128_f8f6f4" in shapes
    assert "tcgen05.mma" in " ".join(facts_for("sm_100").matrix_instructions)
    assert "wgmma" in " ".join(facts_for("sm_90").matrix_instructions)


def test_device_name_selects_the_sku() -> None:
    h100 = facts_for("sm_90", "NVIDIA H100 80GB HBM3")
    h200 = facts_for("sm_90", "NVIDIA H200")
    assert (h100.device, h200.device) == ("H100 SXM", "H200 SXM")
    assert h200.peak_dram_gbs > h100.peak_dram_gbs
    assert facts_for("sm_90", "NVIDIA H100 PCIe").compute_units == 114
    mi300a = facts_for("gfx942", "AMD Instinct MI300A")
    mi300x = facts_for("gfx942", "AMD Instinct MI300X")
    mi325x = facts_for("gfx942", "AMD Instinct MI325X")
    assert (mi300a.compute_units, mi300x.compute_units) == (228, 304)
    assert (mi300a.xcds, mi300x.xcds) == (6, 8)
    assert mi325x.peak_dram_gbs > mi300x.peak_dram_gbs
    assert facts_for("gfx950", "AMD Instinct MI350X").clock_mhz < facts_for("gfx950", "MI355X").clock_mhz


def test_bare_arch_gets_the_default_sku() -> None:
    assert facts_for("gfx942").device == "MI300X"
    assert facts_for("sm_90").device == "H100 SXM"


@pytest.mark.parametrize(
    ("name", "arch"),
    [
        ("NVIDIA H200", "sm_90"),
        ("NVIDIA H100 80GB HBM3", "sm_90"),
        ("NVIDIA A100-SXM4-80GB", "sm_80"),
        ("NVIDIA B200", "sm_100"),
        ("AMD Instinct MI300X", "gfx942"),
        ("AMD Instinct MI300A Accelerator", "gfx942"),
        ("gfx942", "gfx942"),
        ("gfx942:sramecc+:xnack-", "gfx942"),
        ("gfx90a", "gfx90a"),
        ("MI100", "gfx908"),
        ("MI200", "gfx90a"),
        ("AMD Instinct MI250X", "gfx90a"),
        ("AMD Instinct MI355X", "gfx950"),
        ("sm_90a", "sm_90"),
        ("9.0", "sm_90"),
    ],
)
def test_arch_from_device_name(name: str, arch: str) -> None:
    assert arch_from_device_name(name) == arch


def test_rocprof_compute_sysinfo_models_resolve(shared_fixtures: Path) -> None:
    """The gpu_model / gpu_arch strings real sysinfo.csv files carry map onto the table."""
    for sysinfo in sorted((shared_fixtures / "amd" / "rocprof-compute").glob("*/*/sysinfo.csv")):
        row = next(csv.DictReader(sysinfo.open()))
        assert arch_from_device_name(row["gpu_model"]) == row["gpu_arch"], sysinfo
        facts = facts_for(row["gpu_arch"], row["gpu_model"])
        assert facts.compute_units == int(row["cu_per_gpu"]), sysinfo
        assert facts.shared_mem_banks == int(row["lds_banks_per_cu"]), sysinfo
        assert facts.max_warps_per_unit == int(row["max_waves_per_cu"]), sysinfo
        assert facts.shader_engines == int(row["se_per_gpu"]), sysinfo
        assert facts.xcds == int(row["num_xcd"]), sysinfo
        assert facts.clock_mhz == float(row["max_sclk"]), sysinfo
        assert facts.peak_dram_gbs == pytest.approx(float(row["hbm_bw"]), rel=0.01), sysinfo
        # gpu_l2 is in KB, for the whole device on some ROCm versions and per XCD on others
        assert facts.l2_bytes in (int(row["gpu_l2"]) * 1024, int(row["gpu_l2"]) * 1024 * facts.xcds), sysinfo


def test_unknown_arch_is_a_named_bad_input() -> None:
    with pytest.raises(UnknownArch) as info:
        facts_for("gfx1234")
    assert isinstance(info.value, BadInput)
    assert "gfx1234" in str(info.value)
    with pytest.raises(UnknownArch):
        arch_from_device_name("Intel Arc A770")


def test_canonical_arch() -> None:
    assert canonical_arch("SM90a") == "sm_90"
    assert canonical_arch("sm_100a") == "sm_100"
    assert canonical_arch("10.0") == "sm_100"
    assert canonical_arch("GFX950") == "gfx950"


def test_peak_rates_iterate_without_missing_paths() -> None:
    rates = dict(facts_for("gfx950").peak_tflops.items())
    assert "tf32_tensor" not in rates  # CDNA4 has no xf32 MFMA: absent, not zero
    assert rates["bf16_tensor"] > rates["fp32"] > 0
    with pytest.raises(LookupError):
        facts_for("sm_75")


def _ncu_device_attributes(raw_csv: Path) -> dict[str, float | str]:
    lines = raw_csv.read_text(errors="replace").splitlines()
    start = next(i for i, line in enumerate(lines) if "Kernel Name" in line)
    header, _units, values = list(csv.reader(lines[start : start + 3]))
    out: dict[str, float | str] = {}
    for name, value in zip(header, values, strict=True):
        if name.startswith("device__attribute_"):
            try:
                out[name.removeprefix("device__attribute_")] = float(value.replace(",", ""))
            except ValueError:
                out[name.removeprefix("device__attribute_")] = value
    return out


def test_sm_90_facts_match_what_a_real_h200_reports(shared_fixtures: Path) -> None:
    """Nsight Compute records the device's own attributes: the H200 facts must agree with them."""
    attrs = _ncu_device_attributes(shared_fixtures / "ncu" / "h200" / "copy_vec4" / "raw.csv")
    name = str(attrs["display_name"])
    facts = facts_for(arch_from_device_name(name), name)
    assert facts.device == "H200 SXM"
    assert facts.compute_units == attrs["multiprocessor_count"]
    assert facts.warp_size == attrs["warp_size"]
    assert facts.max_warps_per_unit == attrs["max_warps_per_multiprocessor"]
    assert facts.max_threads_per_block == attrs["max_threads_per_block"]
    assert facts.max_blocks_per_unit == attrs["max_blocks_per_multiprocessor"]
    assert facts.registers_per_unit == attrs["max_registers_per_multiprocessor"]
    assert facts.max_registers_per_thread == attrs["max_registers_per_thread"]
    assert facts.shared_mem_per_unit_bytes == attrs["max_shared_memory_per_multiprocessor"]
    assert facts.max_shared_mem_per_block_bytes == attrs["max_shared_memory_per_block_optin"]
    assert facts.l2_bytes == attrs["l2_cache_size"]
    assert facts.clock_mhz == attrs["clock_rate"] / 1000
    # HBM3e: memory clock (kHz) x bus width (bits) x 2 (double data rate) / 8 bits
    bandwidth_gbs = attrs["memory_clock_rate"] * 1e3 * attrs["global_memory_bus_width"] * 2 / 8 / 1e9
    assert facts.peak_dram_gbs == pytest.approx(bandwidth_gbs, rel=0.01)
