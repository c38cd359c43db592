"""Workloads: named prompt sets with their provenance and sha256, for any study.

    workload  what a workload is (its prompts, name, source, sha256) and its errors
    jsonl     a user's own file: one JSON object per line, checked line by line
    embedded  the sets phase knows by name: HumanEval and MT-bench (fetched from PyPI wheels,
              sha256-pinned, cached) and the project's edit prompt
    resolve   a name or a path to a Workload
"""
