package storeview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/tui/printer"
)

// SwitchPrintable is a switch for -o json, yaml and name.
func SwitchPrintable(sw api.StoreSwitch) printer.Printable {
	return printer.Printable{Data: sw, Names: []string{"switch/" + sw.ID}}
}

// Summary is the line printed for people once a switch has ended well,
// once it started (with --no-wait), or for a dry run.
func Summary(sw api.StoreSwitch) string {
	switch sw.State {
	case api.SwitchDryRun:
		return fmt.Sprintf("dry run: a switch from %s to %s would copy %d keys; nothing changed", sw.From, sw.To, sw.Total)
	case api.SwitchRunning:
		return fmt.Sprintf("switch/%s started: %s → %s; follow it with 'kcctl store status'", sw.ID, sw.From, sw.To)
	case api.SwitchFailed:
		return Failure(sw)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "store switched from %s to %s", sw.From, sw.To)
	if t := took(&sw); t != "" {
		fmt.Fprintf(&b, " in %s", t)
	}
	fmt.Fprintf(&b, ": %d keys copied, writes held %s", sw.Copied, Millis(sw.HoldMillis))
	if sw.Revision != 0 {
		fmt.Fprintf(&b, ", at revision %d", sw.Revision)
	}
	if sw.Checksum != "" {
		fmt.Fprintf(&b, ", checksum %s", sw.Checksum)
	}
	return b.String()
}

// Failure says why a switch failed, and that the old backend stays.
func Failure(sw api.StoreSwitch) string {
	phase := ""
	if sw.Phase != "" {
		phase = " in phase " + sw.Phase
	}
	return fmt.Sprintf("the switch from %s to %s failed%s: %s; %s stays the active backend",
		sw.From, sw.To, phase, orNone(sw.Error), sw.From)
}

// Line is one plain progress line: the phase, and the keys copied of the
// total once the total is known ("copy 1200/100000").
func Line(sw api.StoreSwitch) string {
	if sw.Total <= 0 {
		return sw.Phase
	}
	return sw.Phase + " " + strconv.FormatInt(sw.Copied, 10) + "/" + strconv.FormatInt(sw.Total, 10)
}

// Lines prints the progress of a switch as plain lines, for output that
// is not a terminal: a line at each phase, and while the count moves, one
// every Every.
type Lines struct {
	W     io.Writer
	Every time.Duration

	last    api.StoreSwitch
	lastAt  time.Time
	printed bool
}

// Update takes the switch as polled at now.
func (l *Lines) Update(now time.Time, sw api.StoreSwitch) {
	if sw.State != api.SwitchRunning && sw.State != api.SwitchDone {
		return // a failure is reported as an error
	}
	if l.printed && sw.Phase == l.last.Phase &&
		(sw.Copied == l.last.Copied || now.Sub(l.lastAt) < l.Every) {
		return
	}
	fmt.Fprintln(l.W, Line(sw))
	l.last, l.lastAt, l.printed = sw, now, true
}

// Poll reads the store's status.
type Poll func(context.Context) (api.StoreStatus, error)

// Following a switch.
const (
	// PollEvery is how often the status is read while a switch runs.
	PollEvery = 200 * time.Millisecond
	// PollTimeout bounds one read of the status.
	PollTimeout = 5 * time.Second
	// Grace is how long Watch goes on while the status cannot be read, or
	// does not name the switch (a node or the leader restarting).
	Grace = 30 * time.Second
)

// ErrLost says that Watch lost track of a switch: its outcome is unknown.
var ErrLost = errors.New("lost track of the switch")

// Watch polls the status every `every` until switch sw has ended, passing
// every state it reads to report, and returns the switch as it ended
// (done or failed). It returns an error wrapping ErrLost when for grace no
// status could be read or none named sw, and ctx's error when ctx ends.
func Watch(ctx context.Context, poll Poll, sw api.StoreSwitch, every, grace time.Duration, report func(api.StoreSwitch)) (api.StoreSwitch, error) {
	var troubleSince time.Time
	var trouble error
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return sw, fmt.Errorf("stopped following switch/%s, which goes on in the cluster (see 'kcctl store status'): %w", sw.ID, ctx.Err())
		case <-timer.C:
		}
		pctx, cancel := context.WithTimeout(ctx, PollTimeout)
		st, err := poll(pctx)
		cancel()
		now := time.Now()
		switch {
		case ctx.Err() != nil:
			continue // reported at the top
		case err != nil:
			trouble = fmt.Errorf("cannot read the store status: %w", err)
		case st.LastSwitch == nil || st.LastSwitch.ID != sw.ID:
			trouble = fmt.Errorf("the cluster no longer reports switch/%s (a new leader?); %s is the active backend", sw.ID, orNone(st.Backend))
		default:
			troubleSince, trouble = time.Time{}, nil
			sw = *st.LastSwitch
			report(sw)
			if sw.State != api.SwitchRunning {
				return sw, nil
			}
		}
		if trouble != nil {
			if troubleSince.IsZero() {
				troubleSince = now
			}
			if now.Sub(troubleSince) >= grace {
				return sw, fmt.Errorf("%w %s (%s → %s) for %v: %w; see 'kcctl store status'", ErrLost, sw.ID, sw.From, sw.To, grace, trouble)
			}
		}
		timer.Reset(every)
	}
}
