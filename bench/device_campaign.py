"""A short campaign on the machine it runs on, through the library (the device run of issue 17).

Runs the speculative experiment's `code` prompt, plain and draft-2 (the model as its own
draft), with every sensor found, validates the file and prints where the model ran, the
primary energy choice and each run's windows with their edge errors. Writes the results file
and a summary into OUT. It needs only pydantic and llama-cpp-python besides phase.

    PYTHONPATH=. python3 bench/device_campaign.py MODEL.gguf OUT [TOKENS]
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from phase.campaign import (
    DEFAULT_PLAN,
    Destination,
    QuietObserver,
    SensorOptions,
    discover_sensors,
    load_experiment,
    prepare,
)
from phase.validate import validate_file


def main() -> None:
    model, out = sys.argv[1], Path(sys.argv[2])
    tokens = int(sys.argv[3]) if len(sys.argv) > 3 else 512
    out.mkdir(parents=True, exist_ok=True)
    plan = replace(DEFAULT_PLAN, target=model, draft=model, prompts=("code",),
                   strategies=("plain", "draft-2"), tokens=tokens, repeats=2, cooldown_s=0.5,
                   idle_window_s=0.5)
    path = out / "campaign.json"
    experiment = load_experiment("speculative")
    with prepare(experiment, plan, Destination(path), discover_sensors(SensorOptions()),
                 QuietObserver()) as campaign:
        results = campaign.run()
    p = results.provenance
    chosen = results.primary_energy.model_dump() if results.primary_energy else None
    lines = [f"accelerator {p.accelerator}, {p.n_gpu_layers_offloaded} of {p.n_layers} layers "
             f"offloaded; gpus {p.gpus}",
             f"primary energy: {chosen}",
             f"primary energy reason: {results.primary_energy_reason}"]
    for s in results.sensors:
        lines.append(f"sensor {s.name}: {s.scope} {s.kind} update {s.update_period_s} "
                     f"assumed {s.assumed} device {s.device}")
    for run in results.runs:
        lines.append(f"run {run.id}: {run.tokens_per_s:.1f} tok/s, decode {run.decode_s:.3f} s")
        for w in run.energy:
            lines.append(f"  {w.sensor}: {w.energy_j} J ±{w.edge_error_j} "
                         f"({w.energy_reason or 'ok'})")
    report = validate_file(path)
    lines.append(f"validation: {len(report.findings)} findings")
    lines += [f"  {f.severity} {f.rule} {f.run_id or ''} {f.sensor or ''}: {f.message}"
              for f in report.findings]
    (out / "campaign.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(json.dumps({"status": results.status, "runs": len(results.runs)}))


if __name__ == "__main__":
    main()
