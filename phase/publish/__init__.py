"""Publishing: results files + validation findings + note sources -> Markdown pages -> site.

One direction only: nothing here measures or edits a raw results file. Modules, one job each:

    datasets    load a results file once: bytes, sha256, parsed model, validation report, summary
                (summaries are derived in memory by phase.analysis, never written to results/)
    tables      summary rows + findings -> results-table rows (formatted, linked, marked)
    findings    validation findings -> the findings list (rejected values struck through)
    charts      summary rows -> energy charts (Altair/Vega-Lite), PNG fallbacks, the Vega JS
    strategy_charts  the charts that answer a note's question: cost per token, speed vs
                acceptance with break-even, time per token and per-step cost from the trace
    spreads     per-run ranges behind each figure; prompts whose plain baseline is unstable
    steps       per-step cost of drafting and verifying, from each run's trace
    figures     the figure calls of a note's text: value, value_range, step, bench, ...
    downloads   every table as CSV and JSON (pandas), with sha256
    benchpage   bench/results/ -> the Benchmarks page and the figures notes cite from it
    sources     repository files a note links to, published next to the version's page
    provenance  machine, software, models + sha256, date, commit, command of a results file
    changes     what changed between two versions of a note
    rawpages    one data page per results file (every run, anchored by run id)
    anchors     stable page names, anchors and relative links
    notes       note sources: front matter + Markdown with Jinja calls into templates/
    generated   every campaign no authored note cites -> a note per experiment and host class
    headline    computed sentences: best strategy per prompt, a note's one-line headline
    render      one note version -> its page (docs/notes/<slug>/{index.md, vN/index.md})
    archive     published/<slug>/vN/: frozen pages and the sha256 of every input
    versions    a note's pages: archived versions served as published, the rest rendered
    home        the home page's list of notes
    paths       every directory of a build, absolute; which outputs phase may replace
    outdirs     markers, overlap checks, staging directories swapped in on success
    docsbuild   validate and render everything into one (staging) docs dir
    mkdocs_run  mkdocs build --strict with a build's directories
    serving     serve a built site
    site        orchestration: check, render, build, freeze, swap; `phase publish`
"""
