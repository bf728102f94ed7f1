from pingback_guard_cli.main import run

raise SystemExit(run())
