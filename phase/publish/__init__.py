"""Publishing: results files + validation findings + note sources -> Markdown pages -> site.

One direction only: nothing here measures or edits a raw results file. Subpackages, each
importing only those listed below it, and no module importing itself back through others
(`lint-imports` checks both):

    site/       the build: paths (every directory, absolute; the dirs the page kinds own),
                outdirs (markers, staging dirs swapped in on success), docs (validate, gather
                the build's inputs, render every page kind into one staging docs dir),
                mkdocs_run + mkdocs_islands (mkdocs build --strict with each kind's nav
                entries, HTML islands), build (check, render, build, freeze, swap; `phase
                publish`), serving
    pages/      one module per page kind, each a PageKind (base: the interface, BuildInputs,
                Rendered), listed in order in PAGE_KINDS (__init__): home (the notes list),
                note (a note's versions, archived ones served as published), raw (a data page
                per results file), crosshost (host classes side by side), bench (bench/results/
                as the Benchmarks page)
    notes/      note sources (source: front matter + Markdown with Jinja calls), generated
                notes (a note per experiment and host class), figures (the figure calls of a
                note's text), render (one version -> its page), page (Page, and PageAssets: a
                page's files and the charts drawn into it, shared by render and cost_section),
                cost_section (the cost-model part of a page), linked (repository files a note
                links to)
    charts/     energy (summary rows -> energy charts, PNG fallbacks, the Vega JS), strategy
                (cost per token, speed vs acceptance, time per token, per-step cost),
                cost_model (pass cost, predicted vs measured)
    numbers/    tables (results-table rows; each column a figure of phase.analysis.figures,
                which defines and formats every figure), findings (rejected values struck
                through), spreads (per-run ranges), steps (per-step cost from traces),
                headline, provenance, changes (between versions), downloads (every table as
                CSV and JSON), bench (bench/results/ loaded, and the figures notes cite from it)
    data/       datasets (a results file loaded once: bytes, sha256, model, findings, summary,
                derived in memory by phase.analysis, never written to results/), cache (what
                was derived from each unchanged file, under ~/.cache/phase/build-cache)
    archive/    store: published/<slug>/vN/, frozen pages and the sha256 of every input
    markup/     anchors (stable page names, anchors, relative links), islands (HTML blocks
                that skip Markdown and search)
"""
