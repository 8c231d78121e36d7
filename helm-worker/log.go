package main

import "log/slog"

// slogWarnCommandFailed is helm's main's report of a root command that could not be built.
func slogWarnCommandFailed(err error) { slog.Warn("command failed", slog.Any("error", err)) }
