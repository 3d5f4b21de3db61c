"""warmscope core: everything that is not drawing. Never imports Textual, nor torch at import.

Each sub-package is one role; each module one idea.

child/ — what runs in the child. The agent loads this folder whole, by path, as the package
``_warmscope_child``: the standard library only at import, torch passed in (a test imports every
module here with ``python -I -S``). The parent reads ``protocol``, ``knobs`` and ``outcome`` too.
    agent       the child's ``main`` and the timed forward loop
    cpp_agent.cpp  the C++ agent (``--runtime cpp``): the same loop and protocol for TorchScript
                archives and AOTInductor packages in libtorch, built by ``cpp_make``
    loading     the target's module, its inputs, the module put in its mode; a recipe's prepare
    pt2         exported programs and AOTInductor packages: loaded as torch loads them, with
                torch's own error, and the inputs each records
    hooks       warnings and torch.compile's compiles, recompiles and graph breaks, as events
    channel     the agent's side of the protocol: batched sends, iteration markers, its state
    protocol    the message format between agent and parent; markers and their per-run secret
    knobs       every executor knob, declared once
    outcome     run statuses, exit codes, the error root
    ring        the shared-memory ring of iteration timings a crash cannot take away
    gpu_sampler the run's GPU through NVML (the module handed in): here and beside a remote agent
    opprofile   the operator breakdown of a profiled iteration
    remote_guardian  the remote end of ``--host`` (shipped, not loaded by the agent): starts the
                agent there, passes its protocol and samples through, ends what it started
    remote_sampler  CPU and memory of the remote agent's process tree, from /proc, beside it,
                and its GPU where NVML is there
    target_files  what a file target is, told from the file (used here, and shipped for ``--host``)
    cpp_make    the C++ agent built against the torch an interpreter imports, cached (used here,
                and shipped for ``--host``)

run/ — the parent's run machinery.
    run_plan    every process of one run (a profiling one, a warming one, the measured one),
                started by one ``start_run`` for the CLI, the sweep, warmup and the TUI; the
                one Ctrl-C escalation (``drive``)
    session     the measured process: spawn the agent, contain, place, stop, sample, record
    cpp_build   what a ``--runtime cpp`` run needs built: the agent (``cpp_make``), a C++ recipe
    pipes       the reader of the child's two pipes: complete lines to its consumer
    attribution which iteration or phase each stderr line belongs to, from the markers (pure)
    ending      the run's status, detail and exit code from what was seen (pure)
    integrity   checks the parent makes of what the child claims (its ``done``, its timings)
    side_cap    the stderr side file, capped
    child_setup the agent's config (on stdin) and environment
    cgroup      the run's own cgroup v2: ended as one, its memory capped, its OOM kills counted
    proctree    every process of a run found by its run id, and ending them all
    guardian    ends the run's processes if warmscope itself dies
    launcher    children started at warmscope's own priority; the observer kept out of the way
    remote      ``--host``: the agent on another machine over one ``ssh`` connection
    remote_target  a file target over ``--host``: a path there, checked there, asked once
    shipment    the local files a run names (recipe, its artifact, inputs) sent where the child
                runs, and what it makes beside them brought back (``--host``, Ray)
    hangup      SIGHUP and SIGTERM: the terminal detached, the runs ended (CLI and TUI)
    sampler     CPU and memory of the child, from outside; its GPU through ``gpu_sampler``
    jitlog      C++ JIT log lines into events; the label of an iteration
    compile_cache  the inductor/triton cache a compile run gets: cold, warm or the user's
    sweep       cells × fresh processes, interleaved (``warmscope sweep``, ``run --repeat``)
    ray_executor  a sweep's processes as Ray tasks, a whole node each (``--executor ray``)
    warmup      observe, propose and verify warm-up recipes (``warmscope warmup``)
    version     warmscope's own version

data/ — the data model.
    run         ``RunData`` (one run), ``Cursor``/``Update`` (what a consumer takes since its
                last look) and ``LiveRun`` (what a view needs of a run in progress)
    schema      each record line kind declared once: its check and its fold (``KINDS``)
    fold        agent messages into record lines, folded by ``schema``, live and replayed alike
    record      the run record on disk: writing it safely (names, locks, the side file)
    reading     a record read back, within bounds whatever it declares; a live one says so
    follow      a record a live run is writing, followed as it grows (a ``LiveRun``)
    document    the ``--json`` document, written from ``RunData`` and read back through ``schema``
    packing     a batch of iterations packed into one short record line, exact to the ns
    run_fields  every run setting declared once, as a field with its options, kind,
                reproduce-line form, whether compared and whether trusted
    setting_fields  how such a declaration is read, written and shown; the presets
    settings    ``RunSettings``: building, checking, copying and reading them
    targets     what a target string names
    cpp_runtime what ``--runtime cpp`` runs, and the one line that refuses the rest
    stats       latency statistics and when a run is steady (each shape against its own speed)
    first_call  a slow first call no event explains: which, the process that profiles it, its
                label
    intervals   medians with order-statistic 95% intervals, "within noise", a process's shape,
                a noisy run's warnings
    racing      exact rank tests between a sweep's cells, valid under repeated looks;
                racing (dropping cells) for adaptive sweeps; ratios with their intervals

output/ — what is shown.
    digest      the facts every view shows, computed once (status, warm-up rows, settings
                that differ, graph facts, compared metrics, warnings)
    sweep_digest  a sweep's facts, computed once into its document: statistics across
                processes, the ranking, the break-even and the one-line answer
    sweep_hosts  whether the machines a sweep ran on differ beyond noise (the host factor)
    sweep_columns  the columns of a sweep's table, declared once (CLI text and report)
    text_views  the plain text the CLI prints: a run's summary, a sweep, runs compared
    verdicts    when a comparison may call a difference (one process each, repeated
                processes, the same settings twice) and the context that differs
    report      ``warmscope report``; export: ``--json``, CSV, Markdown; hints; breakdown
    recipe      a warm-up recipe and its Python file; recipe_cpp: the libtorch C++ one
    warmup_verdict  a warm-up's verdicts: first calls within noise of steady, the candidate
                chosen, the one-line answer
    units       latencies and rates as people read them, one unit picker for values and columns
    gpu_readout the run's GPU as nvitop shows a device: each reading against its ceiling, N/A
                where the device does not say, and the child's CUDA facts in one line
    safe_text   strings made safe for a terminal

cli/ — the command line: argparse and dispatch, one module a command (each imported when its
command runs).
"""
