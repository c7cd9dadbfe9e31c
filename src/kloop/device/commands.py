"""`kloop doctor`: what device, toolchains and profilers are here, and how fast the device is."""

from __future__ import annotations

import json
import platform
import sys
from typing import Annotated, Any

import typer

from kloop.device.paths import device_cache_path, kloop_home


def doctor_report(device: str = "auto", *, remeasure: bool = False) -> dict[str, Any]:
    """The doctor's findings as plain data (the `--json` output)."""
    import torch

    from kloop import __version__
    from kloop.device.detect import detect
    from kloop.device.tools import describe_tools

    info = detect(device, remeasure=remeasure)
    return {
        "device": info.model_dump(mode="json"),
        "tools": {tool.name: tool.model_dump(mode="json", exclude={"name"}) for tool in describe_tools()},
        "environment": {
            "kloop": __version__,
            "python": platform.python_version(),
            "torch": torch.__version__,
            "platform": platform.platform(),
            "kloop_home": str(kloop_home()),
            "device_cache": str(device_cache_path()),
        },
    }


def _rate(value: float | None, unit: str, scale: float) -> str:
    """Three significant digits without scientific notation: 0.163, 40.9, 4,800."""
    if value is None:
        return "-"
    scaled = value / scale
    text = f"{scaled:,.0f}" if scaled >= 100 else f"{scaled:.3g}"
    return f"{text} {unit}"


def _print_tables(report: dict[str, Any]) -> None:
    """Three short tables: device, peak rates, tools."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    device = report["device"]
    table = Table(title="device", show_header=False)
    for label, key in (("kind", "kind"), ("name", "name"), ("arch", "arch"), ("compute units", "compute_units"),
                       ("runtime", "runtime"), ("torch", "torch_version")):
        table.add_row(label, str(device[key] if device[key] is not None else "-"))
    table.add_row("memory", _rate(device["memory_bytes"], "GiB", 2**30))
    console.print(table)

    measured = device["measurement"] or {}
    rates = Table(title=f"peak rates ({device['peak_source']})")
    rates.add_column("quantity")
    rates.add_column("measured")
    rates.add_column("floor bound (x safety)")
    rates.add_row("bandwidth", _rate(measured.get("copy_gbs"), "GB/s", 1.0),
                  f"{_rate(device['peak_bandwidth_gbs'], 'GB/s', 1.0)} (x{device['bandwidth_safety_factor']:g})")
    for cls, bound in device["peak_flops"].items():
        rates.add_row(f"{cls} matmul", _rate(measured.get("matmul_flops", {}).get(cls), "TFLOP/s", 1e12),
                      f"{_rate(bound, 'TFLOP/s', 1e12)} (x{device['flops_safety_factor']:g})")
    console.print(rates)

    tools = Table(title="toolchains and profilers")
    for column in ("tool", "role", "version", "path"):
        tools.add_column(column)
    for name, tool in report["tools"].items():
        found = tool["path"] or tool["version"]
        tools.add_row(name, tool["role"], tool["version"] or ("-" if found else "[red]missing[/red]"),
                      tool["path"] or "-")
    console.print(tools)


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    remeasure: Annotated[bool, typer.Option("--remeasure", help="Measure peak rates again (refresh the cache).")] = False,
    device: Annotated[str, typer.Option("--device", help="auto, cpu, cuda or rocm.")] = "auto",
    agents: Annotated[bool, typer.Option(
        "--agents", help="Instead: each agent CLI's version and a scripted call through kloop's adapter.")] = False,
) -> None:
    """Show the device, toolchains (nvcc, hipcc, triton), profilers and measured peak rates."""
    if agents:
        from kloop.agents.doctor import agents_report, failed, print_agents

        rows = agents_report()
        if as_json:
            sys.stdout.write(json.dumps({"agents": rows}, indent=2) + "\n")
        else:
            print_agents(rows)
        raise typer.Exit(1 if failed(rows) else 0)
    report = doctor_report(device, remeasure=remeasure)
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        _print_tables(report)


def register(app: typer.Typer) -> None:
    """Add `kloop doctor` as a top-level command."""
    app.command("doctor")(doctor)
