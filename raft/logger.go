package raft

import (
	"context"
	"fmt"
	"log/slog"
	"os"
)

// raftLogger adapts slog to etcd raft's Logger. raft logs a lot at info
// (every vote); that goes to debug, and raft's warnings and errors stay.
type raftLogger struct{ l *slog.Logger }

func (r raftLogger) Debug(v ...any)                 { r.l.Debug(fmt.Sprint(v...)) }
func (r raftLogger) Debugf(format string, v ...any) { r.l.Debug(fmt.Sprintf(format, v...)) }
func (r raftLogger) Info(v ...any)                  { r.l.Debug(fmt.Sprint(v...)) }
func (r raftLogger) Infof(format string, v ...any)  { r.l.Debug(fmt.Sprintf(format, v...)) }
func (r raftLogger) Warning(v ...any)               { r.l.Warn(fmt.Sprint(v...)) }
func (r raftLogger) Warningf(format string, v ...any) {
	r.l.Warn(fmt.Sprintf(format, v...))
}
func (r raftLogger) Error(v ...any)                 { r.l.Error(fmt.Sprint(v...)) }
func (r raftLogger) Errorf(format string, v ...any) { r.l.Error(fmt.Sprintf(format, v...)) }

// Fatal and Panic come from raft's invariant checks: the node cannot go on.
func (r raftLogger) Fatal(v ...any) { r.fatal(fmt.Sprint(v...)) }
func (r raftLogger) Fatalf(format string, v ...any) {
	r.fatal(fmt.Sprintf(format, v...))
}
func (r raftLogger) Panic(v ...any) { s := fmt.Sprint(v...); r.l.Error(s); panic(s) }
func (r raftLogger) Panicf(format string, v ...any) {
	s := fmt.Sprintf(format, v...)
	r.l.Error(s)
	panic(s)
}

func (r raftLogger) fatal(s string) {
	r.l.Log(context.Background(), slog.LevelError, "raft fatal: "+s)
	os.Exit(1)
}
