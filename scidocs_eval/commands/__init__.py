"""Subcommands of `scidocs-eval`: each module here defines `add_commands(subparsers)`; each command sets
`func(args) -> int`. The CLI imports every module of this package."""
