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
    session     spawn the agent, read its pipes, attribute log lines, stop it, record the run
    sweep       ``warmscope sweep`` and ``run --repeat``: cells × fresh processes, interleaved
    warmup      ``warmscope warmup``: observe, propose and verify warm-up recipes (warmup_cli:
                its parser, command and table)
    recipe      a warm-up recipe and its Python file (recipe_cpp: the libtorch C++ one)
    compile_cache  the inductor/triton cache a compile run gets: cold, warm or the user's
    jitlog      C++ JIT log lines into events; the label of an iteration
    sampler     CPU, memory and GPU of the child, from outside
    proctree    every process of a run, escaped ones too, and ending them all
    launcher    children started at warmscope's own priority after its UI lowered its own
    record      the run record on disk: writing it safely, reading it back
    packing     a batch of iterations packed into one short record line, exact to the ns

Data model:
    run         ``RunData`` (one run), ``Cursor``/``Update`` (what a consumer takes since its
                last look) and ``LiveRun`` (what a view needs of a run in progress)
    fold        where a message becomes data: one fold of record lines, live and replayed
    stats       latency statistics and when a run is steady
    intervals   medians with order-statistic 95% intervals, "within noise", a process's shape
                (flat, warm-up, slowdown, no steady state), a noisy run's warnings
    settings    ``RunSettings`` and presets; targets: what a target string names

Output:
    digest      the facts every view shows, computed once (status, warm-up rows, settings
                that differ, graph facts, compared metrics, warnings)
    sweep_digest  a sweep's facts, computed once into its document: statistics across
                processes, the ranking, the break-even and the one-line answer
    report      ``warmscope report``; export: ``--json``, CSV, Markdown; hints; breakdown
    units       latencies and rates as people read them; safe_text: strings made safe for a
                terminal

Entry:
    cli         argparse and dispatch
"""
