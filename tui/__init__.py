"""warmscope TUI: the Textual app. Never imports torch.

Each module one idea. The layers, highest first (import-linter's TUI contract in pyproject.toml
holds them and names every module, run by ``make lint``): terminal_app > app > the app's parts
> screens/ > what screens read and send > widgets/ > run_view > drawing/ > fmt, glyphs.
Screens and widgets never import the app: they tell it what happened with messages.

tui/ — the app, its parts, and what its screens and widgets share, in the layers' order.
    terminal_app  ``run_app``: the TUI in the user's terminal, from the command line to its
                exit code
    app         ``WarmscopeApp``: routes keys and messages to its parts and its screens; the
                one ``open`` action that loads a screen when its key is first pressed
    run_control starting, stopping and killing runs and sweeps as the user asks; the next
                run's settings; a sweep's processes made runs of the session
    viewer      the run the main screen shows, kept current: the poll timer, each batch
                applied, a compare screen over it followed, its end told
    summaries   a run's summary computed on a thread worker, kept, the main screen told
    opening     what the app was started with: records (long ones behind the loading
                screen), their sweeps, the first run
    program_watch  ``warmscope exec``: each process of the program a live run as it joins
    quitting    leaving with no child behind: ``q``, a hang-up or SIGTERM, the last resort
    exporting   the comparison a compare screen asks to export; what an export wrote, told
    palette     the command palette's own entries: every run key, the help, the presets
    ascii_filter  line filters: no control character reaches the terminal; ASCII for ``--ascii``
    hangup_watchdog  the runs stopped and the process ended when the terminal is gone
    signal_wakeup  signals that wake the event loop (a resume after Ctrl+Z)
    repaint_all every cell of the screen sent again (Ctrl+L, a resume)
    screens/    one module per screen (below)
    app_state   ``AppState``: every run, the one viewed, the next run's settings, the sweeps,
                the one start at a time; what a screen's opener is given
    controller  ``RunController``: the app's runs and their life cycle, with no Textual
    run_start   a start (run, sweep, warm-up) made on a worker: ``Pending``, the one slot
    keys        every key, declared once: bindings, footer, help, palette, and the screen a
                key opens
    messages    what workers and screens tell the app (``ToApp``), and the loading screen
    export_jobs what an export writes (a run's files, a comparison's), with no Textual
    record_reading  the records opened, read at once or in a worker that tells its progress
    sweep_runner  a sweep started from the TUI: core's ``Sweep`` on a worker thread
    repaint     ``RepaintBudget``: when each pane of the main screen may repaint
    widgets/    one widget per module (below)
    run_view    ``RunEntry`` and ``RunView``: each run the app knows and the bounded copy the
                panes draw
    drawing/    charts drawn as text (below)
    fmt         short, fixed-width latencies, durations and settings for narrow panes
    glyphs      the characters charts are drawn with: Unicode, or plain ASCII

screens/ — one module per screen, its stylesheet beside it; each but the main one loads when
first opened, through the ``open_screen`` its key names (``keys``).
    main_screen the main screen: header, latency chart, summary, iterations, events, usage,
                stderr
    settings_screen  the next run's settings, generated from the declared knobs; a sweep's plan
    history_screen  every run of the session and every opened record; view one, compare some
    compare_screen  two runs or more, each against the first, overlaid, their differences in
                words
    export_screen  where to write an export, its files named beforehand; the writing worker
    profile_screen  which iterations the next run profiles
    graphs_screen  a TorchScript run's graphs, as loaded and as run warm, and its code
    warmup_screen  a warm-up recipe from the viewed run's settings, verified live
    sweep_screen  a sweep's answer, each process's first iteration, each setting's medians
    help_screen every key, what it does, what the figures mean
    loading_screen  long records read in a worker, with how far it has got
    iteration_screen  one iteration: its latency, events and profile
    event_screen  the full text of events
    goto_screen any iteration, by its number
    confirm_screen  a yes/no question before what cannot be undone
    trust_screen  settings from a file that choose what runs, shown before a run uses them
    prompt_screen  the base of one-line prompts (export, profile, go to)
    tabbed_modal  the base of screens made of tabs over the main one
    text_search  the base of read-only text searched with ``/``

widgets/ — one widget per module: the bases (row lists, lines of text, fields) and what
screens other than the main one draw; a run's panes in ``run/``.
    text_lines  a widget drawn from lines of styled runs, turned into strips once per change
    row_list    a bounded list drawn line by line, with a fixed header and a cursor
    choice_field  one focusable line that cycles through a few values
    search_line ``/`` over read-only text, as in ``less``
    keys_footer Textual's footer, rebuilt only when its keys change
    clock_line  a line of text rewritten every second or faster, with its clock
    overlay_chart  every compared run's latency curve over the same iterations
    sweep_chart a sweep's first iterations, one strip per cell
    run/        the panes that draw one run (below)

widgets/run/ — the panes of the main screen, each drawing one run.
    run_header  target, mode, changed settings, status and elapsed time
    latency_chart  every iteration's latency so far, drawn once per tick
    summary_panel  first iteration, warm-up, percentiles, a slow first call's explanation
    iteration_table  every iteration: latency, shape, label, events; by number or slowest
    events_pane JIT and compiler events and warnings, each with its iteration
    utilization_pane  the GPU as nvitop shows it, the child's CPU and memory, system CPU
    stderr_pane the child's stderr lines

drawing/ — charts drawn as text: pure functions and the bounded series they draw; no widgets.
    chart       latency charts: bars in eighth blocks, overlays in braille
    series      ``LatencySeries``: every iteration of a run, for drawing, in bounded memory
    sweep_strips  a sweep's first iterations: one strip per cell, every process a point
"""
