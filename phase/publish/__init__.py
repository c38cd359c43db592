"""Publishing: results files + validation findings + note sources -> Markdown pages -> site.

One direction only: nothing here measures or edits a raw results file. Subpackages, each
importing only those listed below it (`lint-imports` checks the order):

    site/       the build: paths (every directory, absolute), outdirs (markers, staging dirs
                swapped in on success), docs (validate and render into one staging docs dir),
                mkdocs_run + mkdocs_islands (mkdocs build --strict, HTML islands), build
                (check, render, build, freeze, swap; `phase publish`), serving
    pages/      one module per page kind: note (a note's versions, archived ones served as
                published), raw (a data page per results file), crosshost (host classes side
                by side), home (the notes list)
    notes/      note sources (source: front matter + Markdown with Jinja calls), generated
                notes (a note per experiment and host class), figures (the figure calls of a
                note's text), render (one version -> its page), cost_section (the cost-model
                part of a page), linked (repository files a note links to)
    charts/     energy (summary rows -> energy charts, PNG fallbacks, the Vega JS), strategy
                (cost per token, speed vs acceptance, time per token, per-step cost),
                cost_model (pass cost, predicted vs measured)
    numbers/    tables (results-table rows; each column a figure of phase.analysis.figures,
                which defines and formats every figure), findings (rejected values struck
                through), spreads (per-run ranges), steps (per-step cost from traces),
                headline, provenance, changes (between versions), downloads (every table as
                CSV and JSON), bench (bench/results/ -> the Benchmarks page and the figures
                notes cite from it)
    data/       datasets (a results file loaded once: bytes, sha256, model, findings, summary,
                derived in memory by phase.analysis, never written to results/), cache (what
                was derived from each unchanged file, under ~/.cache/phase/build-cache)
    archive/    store: published/<slug>/vN/, frozen pages and the sha256 of every input
    markup/     anchors (stable page names, anchors, relative links), islands (HTML blocks
                that skip Markdown and search)
"""
