"""warmscope core: everything that is not drawing. Never imports Textual, nor torch at import.

Modules by role:

Child side (loaded by path by the agent as the package ``_warmscope_child``; standard library
only at import, torch passed in):
    agent       the child's ``main`` and the timed forward loop
    loading     the target's module, its inputs, the module put in its mode (script, compile…)
    hooks       warnings and torch.compile's compiles, recompiles and graph breaks, as events
    channel     the agent's side of the protocol: batched sends, iteration markers, its state
    protocol    the message format between agent and parent
    knobs       every executor knob, declared once (also read by the parent)
    outcome     run statuses, exit codes, the error root (shared by child and parent)
    ring        the shared-memory ring of iteration timings a crash cannot take away
    opprofile   the operator breakdown of a profiled iteration

Parent run machinery:
    run_plan    every process of one run (a profiling one, a warming one, the measured one),
                started by one ``start_run`` for the CLI, the sweep and the TUI; Ctrl-C's stop
    session     spawn the agent, place it, stop it, sample and record the run
    child_setup the agent's config (on stdin) and environment
    integrity   what the parent checks of what the child says (a done, the ring, timings)
    side_cap    the child's stderr side file, kept up to a cap
    pipes       the reader of the child's two pipes: complete lines to its consumer
    attribution which iteration or phase each stderr line belongs to, from the markers (pure)
    ending      the run's status, detail and exit code from what was seen (pure)
    sweep       ``warmscope sweep`` and ``run --repeat``: cells × fresh processes, interleaved
    warmup      ``warmscope warmup``: observe, propose and verify warm-up recipes (core/cli/warmup.py:
                its parser, command and table)
    recipe      a warm-up recipe and its Python file (recipe_cpp: the libtorch C++ one)
    compile_cache  the inductor/triton cache a compile run gets: cold, warm or the user's
    jitlog      C++ JIT log lines into events; the label of an iteration
    sampler     CPU, memory and GPU of the child, from outside
    proctree    every process of a run, escaped ones too, and ending them all
    launcher    children started at warmscope's own priority after its UI lowered its own
    record      the run record on disk: writing it safely (names, locks, the side file)
    reading     a record or a ``--json`` document read back, within bounds whatever it declares;
                one a live run still writes reads as ``running``
    follow      a record a live run still writes, followed as it grows (a ``LiveRun``)
    packing     a batch of iterations packed into one short record line, exact to the ns

Data model:
    run         ``RunData`` (one run), ``Cursor``/``Update`` (what a consumer takes since its
                last look) and ``LiveRun`` (what a view needs of a run in progress)
    schema      each record line kind declared once: its check and its fold (``KINDS``)
    fold        where a message becomes data: agent messages into record lines, folded by
                ``schema``, live and replayed alike
    stats       latency statistics and when a run is steady
    intervals   medians with order-statistic 95% intervals, "within noise", a process's shape
                (flat, warm-up, slowdown, no steady state), a noisy run's warnings
    run_fields  every run setting declared once, as a field with its options, kind,
                reproduce-line form, whether compared and whether trusted
    setting_fields  how such a declaration is read, written and shown; the presets
    settings    ``RunSettings``: building, checking, copying and reading them; targets: what
                a target string names

Output:
    digest      the facts every view shows, computed once (status, warm-up rows, settings
                that differ, graph facts, compared metrics, warnings)
    sweep_digest  a sweep's facts, computed once into its document: statistics across
                processes, the ranking, the break-even and the one-line answer
    report      ``warmscope report``; export: ``--json``, CSV, Markdown; hints; breakdown
    document    the ``--json`` document, written from ``RunData`` and read back through ``schema``
    units       latencies and rates as people read them, one unit picker for values and
                columns; safe_text: strings made safe for a terminal
    text_views  the plain text the CLI prints: a run's summary, a sweep, runs compared
    sweep_columns  the columns of a sweep's table, declared once (CLI text and report)

Entry:
    cli         the package of commands: argparse and dispatch, one module a command
    hangup      SIGHUP and SIGTERM: the terminal detached, the runs ended (CLI and TUI)
"""
