"""warmscope core: everything that is not drawing. Never imports Textual, nor torch at import.

Each sub-package is one role; each module one idea. The layers, lowest first (import-linter's
contracts in pyproject.toml hold them, run by ``make lint``): base/ < data/ < output/ < run/,
and above them the front ends, cli/ and tui/. child/ lies below them all: it imports nothing
of the parent, and the parent reads a few of its declarations (``protocol``, ``knobs``,
``outcome``).
A module lower down never imports one higher up; siblings within a layer import without cycles.

base/ — what every layer uses, with no idea of a run.
    safe_text   text from a child, a model or a file made safe to show on a terminal
    code_text   text from outside as it may enter generated code: literals, escaped comments
    units       latencies and rates as people read them, one unit picker for values and columns
    sizes       sizes as people write them (``--memory-limit 512M``)
    files       files written whole or not at all: beside, then renamed

child/ — what runs in the child. The agent loads this folder whole, by path, as the package
``_warmscope_child``: the standard library only at import, torch passed in (a test imports every
module here with ``python -I -S``). The parent reads ``protocol``, ``knobs`` and ``outcome`` too.
    agent       the child's ``main``: its start, the run's setup, the measuring, each failure
    timed_loop  the timed forward loop: made ready, run with nothing per iteration but the call
                and its bookkeeping, its figures batched to the parent and kept in the ring
    after_loop  what may follow the loop: the opening replayed warm, the idle probe
    cuda_timing a call's wait for the current CUDA stream, and its device time (event pairs)
    torch_knobs the knobs and torch config options set on the child's torch, as declared
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
    inputs      one call's input tensors from their specs, dimensions and seed, as
                ``input_spec`` says (a Python recipe embeds it, so its inputs are the run's)
    input_spec  the one rule for input tensors every maker follows (Python, the C++ agent,
                recipes, a package's checked inputs): dtypes, fills, where the seed applies
    ring        the shared-memory ring of iteration timings a crash cannot take away
    io_counters what the child read from disk, from its own counters: between batches of calls
                and around setup phases, never inside a call
    cpu_waits   how long the child's threads waited for a core (run-queue delay), read after
                calls a while apart; the cores the child may use
    exec_watch  a program's own outermost forward calls, timed from inside it (``warmscope exec``):
                a timer in each outermost module's call slot, nothing per submodule
    exec_stream one batched stream per process of a watched program, to the parent's socket
                (``exec_boot/sitecustomize.py`` loads both once the program imports torch)
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
    session     the measured process (``RunSession``): start, read, sample, end, with its
                collaborators:
    live_record the run's record as it is written, and the live data folded from its lines
    agent_process  the agent's process and the run's others: spawned (here, C++, ``--host``),
                contained, signalled, their leftovers ended, out of memory or not
    run_stop    the stops asked of a run: graceful, a kill, warmscope's own end with a status
    child_messages  the child's protocol messages taken in: checked, folded, recorded; the
                iterations recovered from the ring
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
    remote_target  a file target over ``--host``: a path there, checked there, asked once;
                where a run's host comes from (``resolve``)
    shipment    the local files a run names (recipe, its artifact, inputs) sent where the child
                runs, and what it makes beside them brought back (``--host``, Ray)
    hangup      SIGHUP and SIGTERM: the terminal detached, the runs ended (CLI and TUI)
    sampler     CPU and memory of the child, from outside; its GPU through ``gpu_sampler``
    jitlog      C++ JIT log lines into events; the label of an iteration
    compile_cache  the inductor/triton cache folders and their environment (the policy is
                ``data/settings/compile_cache``)
    sweep       cells × fresh processes, interleaved (``warmscope sweep``, ``run --repeat``)
    ray_executor  a sweep's processes as Ray tasks, a whole node each (``--executor ray``)
    warmup      observe, propose and verify warm-up recipes (``warmscope warmup``)
    warmup_candidates  the candidate recipes proposed from what the baseline observed, as files
    warmup_facts  what a warm-up's processes measured: per shape observed, a cell's figures
    warmup_progress  a warm-up's steps run stoppably and told (``Progress``); its plan in words
    warmup_handover  the recipe handed over: the verified file under a header with its verdict
    version     warmscope's own version
    exec_session  ``warmscope exec``: the user's program started with the observer, its
                processes' streams read from a private socket, its tree ended after it
    exec_fold   one watched process's stream as a run: its calls as iterations grouped by
                module and signature, its events on their calls, its record

data/ — the data model: records, settings and what can be computed from them alone.
    run         ``RunData`` (one run), ``Cursor``/``Update`` (what a consumer takes since its
                last look) and ``LiveRun`` (what a view needs of a run in progress)
    settings/   a run's settings, declared once: ``run_settings`` (``RunSettings``), ``fields``
                (every setting as a field: option, kind, reproduce-line form, compared,
                trusted; ``RunFields`` from its groups: ``workload_fields``,
                ``executor_fields``, ``process_fields``, ``capture_fields``), ``field_forms``
                (the fields' own readers, writers and consent lines), ``setting`` (how a
                declaration is read, written and shown; the
                presets), ``compile_cache`` (the one compile-cache policy), ``field_text``
                (a setting typed as text, read by its own option: the settings form's parser)
    schema      each record line kind declared once: its check and its fold (``KINDS``)
    fold        agent messages into record lines, folded by ``schema``, live and replayed alike
    record      the run record on disk: writing it safely (names, the side file)
    record_lock whether a live run is writing a record (its writer's ``flock``)
    reading     a record read back, within bounds whatever it declares; a live one says so
    follow      a record a live run is writing, followed as it grows (a ``LiveRun``)
    document    the ``--json`` document, written from ``RunData`` and read back through ``schema``
    run_summary a run's ``summary``: its statistics, its rows and what its profiles say
    summary_rows    the summary's rows: each shape's first call, the idle probe, device time
    packing     a batch of iterations packed into one short record line, exact to the ns
    env_keys    every key of a run's ``env``: its writer, its shape, how it is shown
    targets     what a target string names
    traffic     a ``warmscope exec`` record's calls of one module as a warm-up's ``--input``
                specs and ``--dim`` sizes, in the order first seen (``warmup --traffic``)
    cpp_runtime what ``--runtime cpp`` runs, and the one line that refuses the rest
    stats       latency statistics and when a run is steady (each shape against its own speed)
    labels      an iteration's label: the strongest cause its events show (``cause_kinds``)
    first_call  a slow first call no event explains: which, the process that profiles it, its
                label, whether that process reproduced it and the share its causes explain
    breakdown   where a slow iteration's time went, against a steady one (operator profiles)
    trace_evidence  what a profiled call's CUDA activity says (runtime calls, CUPTI, kernels)
    cause_kinds every cause's name, declared once; the causes events show, with their labels
                and precedence, and which event shows which; ``Cause``
    causes      why the slow calls were slow: each cause named from the run's own evidence
    profile_causes  what a first call's profile on CUDA shows against a steady call (library
                first use, cuDNN autotuning, lazy loading, allocator growth); unprofiled, its
                settings
    disk_read_causes  reads from disk as a cause: a slow warm-up call's batch, a setup phase
    cuda_facts  what a run says of its CUDA: on CUDA, cuDNN autotuning, module loading, CUDA
                graphs
    waits       the child's waits for a core, reading by reading, and the calls they contended
    contention  CPU contention named: a slow call's wait for a core, the machine's load and
                pressure, more torch threads than usable cores
    intervals   medians with order-statistic 95% intervals, "within noise", a process's shape,
                a noisy run's warnings
    racing      exact rank tests between a sweep's cells, valid under repeated looks;
                racing (dropping cells) for adaptive sweeps; ratios with their intervals
    sweep_plan  a sweep's plan (processes per setting, presets, varied knobs) parsed once,
                with one set of limits, for the command line and the TUI
    sweep_state a sweep as it stands (cells, plan, finished processes): what its digest reads
    sweep_schema    the sweep document's fields, each with the type a reader relies on
    sweep_document  the sweep document read back like a record: whole, bounded, checked

output/ — what is shown, computed from data/.
    digest      the facts every view of a run shows, computed once (status, warm-up rows,
                graph facts, inputs, memory, device, warnings)
    settings_diff  a run's settings as views write them: its one line, what differs between
                two runs'
    comparison  runs compared: each statistic of two sides with its verdict; the
                ``warmscope-comparison`` document
    text_views  the plain text the CLI prints: a run's summary, a sweep, runs compared
    report      ``warmscope report``: a run as Markdown, a section from its digest each
    export      ``--json``, CSV and Markdown of a run or a comparison
    hints       plainly worded hints, each backed by what the record shows
    verdicts    when a comparison may call a difference (one process each, repeated
                processes, the same settings twice) and the context that differs
    sweep_stats the statistics a sweep's views share (medians with intervals, objectives)
    sweep_digest  a sweep's facts, computed once into its document: statistics across
                processes, the ranking, the break-even and the one-line answer
    sweep_hosts whether the machines a sweep ran on differ beyond noise (the host factor)
    sweep_columns  the columns of a sweep's table, declared once (CLI text and report)
    recipe      a warm-up recipe and its Python file
    recipe_cpp  a warm-up recipe as a libtorch C++ file, and the line that builds it
    inputs_cpp  the input rule in C++: the C++ agent's table of it (generated into
                ``cpp_agent.cpp``) and the expression a C++ recipe makes each input with
    warmup_verdict  a warm-up's verdicts: first calls within noise of steady, the candidate
                chosen, the one-line answer
    gpu_readout the run's GPU as nvitop shows a device: each reading against its ceiling, N/A
                where the device does not say, and the child's CUDA facts in one line

cli/ (top level, ``warmscope.cli``) — the command line: argparse and dispatch, one module a
command (each imported when its command runs). tui/ — the Textual app; it starts runs through
run/ and never imports torch.
"""
