package restapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	kcdapi "github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/daemon/coordinator"
	"github.com/kcd-project/kcd/store"
)

// Event is one server-sent event of GET /kcd/v1/events: its type is the
// SSE event name ("status", "rebalance", "worker", "leader"), Data its JSON.
type Event struct {
	Type string
	Data any
}

// The data of the "status", "worker" and "leader" events (see package
// api); a "rebalance" event's is a coordinator.Rebalance.
type (
	StatusEvent = kcdapi.StatusEvent
	WorkerEvent = kcdapi.WorkerEvent
	LeaderEvent = kcdapi.LeaderEvent
)

const (
	eventBuffer    = 256
	eventKeepAlive = 15 * time.Second
)

// events streams status changes, rebalances, worker sessions and leader
// changes as server-sent events, for the dashboard. A client that does
// not keep up is cut off (its store watch falls behind); it reconnects.
func (a *api) events(r *http.Request) (int, any, *Error) {
	return http.StatusOK, streamBody(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		out := make(chan Event, eventBuffer)
		var wg sync.WaitGroup
		for _, p := range []string{connectstore.Prefix + "status/", coordinator.RebalancePrefix, coordinator.WorkerPrefix} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer cancel()
				a.watchEvents(ctx, p, out)
			}()
		}
		if a.cluster != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.watchLeader(ctx, out)
			}()
		}
		defer wg.Wait()

		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		_, _ = fmt.Fprint(w, ": kcd events\n\n")
		_ = rc.Flush()
		keep := time.NewTicker(eventKeepAlive)
		defer keep.Stop()
		for {
			var err error
			select {
			case <-ctx.Done():
				return
			case <-keep.C:
				_, err = fmt.Fprint(w, ": keep-alive\n\n")
			case ev := <-out:
				b, _ := json.Marshal(ev.Data)
				_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
				_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b)
			}
			if err == nil {
				err = rc.Flush()
			}
			if err != nil {
				return
			}
		}
	}), nil
}

func (a *api) watchEvents(ctx context.Context, prefix string, out chan<- Event) {
	wt, err := a.store.Watch(ctx, prefix, 0)
	if err != nil {
		return
	}
	defer wt.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wt.Events():
			if !ok {
				return
			}
			e, ok := toEvent(prefix, ev)
			if !ok {
				continue
			}
			select {
			case out <- e:
			case <-ctx.Done():
				return
			}
		}
	}
}

func toEvent(prefix string, ev store.Event) (Event, bool) {
	rest := strings.TrimPrefix(ev.KV.Key, prefix)
	switch prefix {
	case coordinator.RebalancePrefix:
		var rb coordinator.Rebalance
		if ev.Type != store.EventPut || json.Unmarshal(ev.KV.Value, &rb) != nil {
			return Event{}, false
		}
		return Event{"rebalance", rb}, true
	case coordinator.WorkerPrefix:
		return Event{"worker", WorkerEvent{ID: rest, Joined: ev.Type == store.EventPut && ev.KV.CreateRevision == ev.KV.ModRevision}}, ev.Type == store.EventDelete || ev.KV.CreateRevision == ev.KV.ModRevision
	default: // statuses: <connector>/connector or <connector>/task/<id>
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return Event{}, false
		}
		name, err := url.PathUnescape(rest[:i])
		if err != nil {
			return Event{}, false
		}
		se := StatusEvent{Connector: name, Deleted: ev.Type == store.EventDelete}
		if part := rest[i+1:]; part != "connector" {
			id, err := strconv.Atoi(part[strings.LastIndexByte(part, '/')+1:])
			if err != nil {
				return Event{}, false
			}
			se.Task = &id
		}
		if ev.Type == store.EventPut {
			var st connectstore.Status
			if json.Unmarshal(ev.KV.Value, &st) != nil {
				return Event{}, false
			}
			se.State, se.WorkerID, se.Trace = st.State, st.WorkerID, st.Trace
		}
		return Event{"status", se}, true
	}
}

func (a *api) watchLeader(ctx context.Context, out chan<- Event) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var last LeaderEvent
	first := true
	for {
		info, err := a.cluster.Info(ctx)
		if err == nil && (first || info.Leader != last.Leader) {
			first = false
			last = LeaderEvent{Leader: info.Leader, Term: info.Term}
			select {
			case out <- Event{"leader", last}:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
