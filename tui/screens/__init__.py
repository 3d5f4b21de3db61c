"""The app's screens: one module per screen, its stylesheet beside it (loaded when it first opens)."""
