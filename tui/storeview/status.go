// Package storeview prints kcctl's store commands: the status of the
// metadata store, and a switch as it runs (a progress bar on a terminal,
// plain lines otherwise) and as it ended.
package storeview

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/tui/printer"
)

// StatusPrintable is kcctl store status for -o json, yaml and name.
func StatusPrintable(st api.StoreStatus) printer.Printable {
	return printer.Printable{Data: st, Names: []string{"store/" + st.Backend}}
}

// Status is kcctl store status for people: the active backend, its masked
// settings and health, and the last switch with its figures.
func Status(st api.StoreStatus, now time.Time) string { return status(st, now, false) }

// StatusWide is Status for -o wide: the times in full (UTC), the last
// switch's phase, start and end, and its warnings.
func StatusWide(st api.StoreStatus, now time.Time) string { return status(st, now, true) }

func status(st api.StoreStatus, now time.Time, wide bool) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	line("Backend", orNone(st.Backend))
	line("Settings", Settings(st.Settings))
	if st.Healthy {
		line("Health", "healthy (a read took "+Millis(st.LatencyMillis)+")")
	} else {
		line("Health", "UNHEALTHY: "+orNone(st.Error))
	}
	if wide {
		line("Checked at", stamp(now))
	}
	line("Revision", strconv.FormatInt(st.Revision, 10))
	switch {
	case st.Since.IsZero():
		line("Active since", "the cluster's start")
	case wide:
		line("Active since", stamp(st.Since)+" ("+printer.Age(now.Sub(st.Since))+" ago)")
	default:
		line("Active since", when(st.Since, now))
	}
	line("Backends", orNone(strings.Join(st.Backends, ", ")))
	sw := st.LastSwitch
	if sw == nil {
		line("Last switch", "<none>")
		tw.Flush()
		return b.String()
	}
	state := sw.State
	switch sw.State {
	case api.SwitchRunning:
		state = "running (" + sw.Phase + "), started " + printer.Age(now.Sub(sw.StartedAt)) + " ago"
	case api.SwitchDone, api.SwitchFailed:
		if !sw.EndedAt.IsZero() {
			state += " " + printer.Age(now.Sub(sw.EndedAt)) + " ago"
		}
		if took := took(sw); took != "" {
			state += ", took " + took
		}
	}
	line("Last switch", sw.From+" → "+sw.To+", "+state)
	line("  Id", sw.ID)
	if wide {
		line("  Phase", orNone(sw.Phase))
		line("  Started", stamp(sw.StartedAt))
		line("  Ended", stamp(sw.EndedAt))
	}
	line("  Keys copied", fmt.Sprintf("%d of %d", sw.Copied, sw.Total))
	if sw.State != api.SwitchRunning {
		line("  Writes held", Millis(sw.HoldMillis))
	}
	if sw.Revision != 0 {
		line("  At revision", strconv.FormatInt(sw.Revision, 10))
	}
	if sw.Checksum != "" {
		line("  Checksum", sw.Checksum)
	}
	if sw.Error != "" {
		line("  Error", sw.Error)
	}
	if wide {
		for _, w := range sw.Warnings {
			line("  Warning", w)
		}
	}
	tw.Flush()
	return b.String()
}

// stamp is t in UTC to the millisecond, <none> when zero.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "<none>"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// Settings prints a backend's settings, already masked by the server, as
// sorted key=value pairs.
func Settings(s map[string]string) string {
	if len(s) == 0 {
		return "<none>"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, k+"="+s[k])
	}
	return strings.Join(parts, ", ")
}

// Millis prints a duration given in milliseconds, to the microsecond
// below a second.
func Millis(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	if d < time.Second {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func when(t, now time.Time) string {
	return t.UTC().Format(time.RFC3339) + " (" + printer.Age(now.Sub(t)) + " ago)"
}

// took is how long a finished switch ran, "" when unknown.
func took(sw *api.StoreSwitch) string {
	if sw.EndedAt.IsZero() || sw.StartedAt.IsZero() {
		return ""
	}
	d := sw.EndedAt.Sub(sw.StartedAt)
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
