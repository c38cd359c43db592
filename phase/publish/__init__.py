"""Publishing: results files + validation findings + note sources -> Markdown pages -> site.

One direction only: nothing here measures or edits a raw results file. Modules, one job each:

    datasets    load a results file once: bytes, sha256, parsed model, validation report, summary
                (summaries are derived in memory by phase.analysis, never written to results/)
    tables      summary rows + findings -> results-table rows (formatted, linked, marked)
    findings    validation findings -> the findings list (rejected values struck through)
    charts      summary rows -> Altair/Vega-Lite specs, PNG fallbacks, the vendored Vega JS
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
