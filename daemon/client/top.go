package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/kcd-project/kcd/api"
)

// The calls `kcctl top` needs besides the others: the event stream and a
// worker's own view of what it runs.

// LocalWorker is GET /kcd/v1/worker: what the worker of the node at the
// client's URL runs, and each unit's start and record counts.
func (c *Client) LocalWorker(ctx context.Context) (api.LocalWorkerView, error) {
	var v api.LocalWorkerView
	return v, c.do(ctx, http.MethodGet, "/kcd/v1/worker", &v)
}

// MaxEventLine bounds one line of the event stream (a status event's
// trace included); a longer line ends the stream with an error.
const MaxEventLine = 1 << 20

// Event is one server-sent event of GET /kcd/v1/events: Type is "status",
// "rebalance", "worker" or "leader", Data its JSON.
type Event struct {
	Type string
	Data json.RawMessage
}

// EventStream reads GET /kcd/v1/events. It is not safe for concurrent use;
// Close ends it (a blocked Next returns).
type EventStream struct {
	body io.ReadCloser
	sc   *bufio.Scanner
}

// Events opens GET /kcd/v1/events on BaseURL (not on the fallbacks: the
// caller picks the server). The stream is not bounded by the client's
// request timeout (it lasts until ctx ends or Close); the server sends a
// comment at least every 15 s, which Next skips.
func (c *Client) Events(ctx context.Context) (*EventStream, error) {
	base := c.BaseURL()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/kcd/v1/events", nil)
	if err != nil {
		return nil, fmt.Errorf("build request GET /kcd/v1/events: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	c.authorize(req)
	hc := &http.Client{Transport: c.http.Transport} // no timeout: a stream
	res, err := hc.Do(req)
	if err != nil {
		return nil, &UnreachableError{URL: base, Err: err}
	}
	if res.StatusCode >= 400 {
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		var em struct {
			ErrorCode int    `json:"error_code"`
			Message   string `json:"message"`
		}
		if json.Unmarshal(b, &em) != nil || em.Message == "" {
			em.Message = strings.TrimSpace(string(b))
			if em.Message == "" {
				em.Message = http.StatusText(res.StatusCode)
			}
		}
		return nil, &APIError{Status: res.StatusCode, ErrorCode: em.ErrorCode, Message: em.Message, Method: http.MethodGet, Path: "/kcd/v1/events",
			RetryAfter: retryAfter(res.Header.Get("Retry-After"), time.Now())}
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		res.Body.Close()
		return nil, fmt.Errorf("GET /kcd/v1/events: answered %q, not an event stream", ct)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 4096), MaxEventLine)
	return &EventStream{body: res.Body, sc: sc}, nil
}

// Next returns the next event. Every line counts as activity: alive, when
// not nil, is called for each (keep-alive comments included), so that a
// caller can tell a silent connection from a quiet cluster.
func (s *EventStream) Next(alive func()) (Event, error) {
	var ev Event
	var data []byte
	for s.sc.Scan() {
		if alive != nil {
			alive()
		}
		line := s.sc.Bytes()
		switch {
		case len(line) == 0: // the end of an event
			if ev.Type != "" || data != nil {
				if ev.Type == "" {
					ev.Type = "message"
				}
				ev.Data = data
				return ev, nil
			}
		case line[0] == ':': // a comment
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "event":
				ev.Type = string(value)
			case "data":
				if len(data)+len(value) > MaxEventLine {
					return Event{}, errors.New("event stream: an event's data is too long")
				}
				if data != nil {
					data = append(data, '\n')
				}
				data = append(data, value...)
			}
		}
	}
	if err := s.sc.Err(); err != nil {
		return Event{}, fmt.Errorf("event stream: %w", err)
	}
	return Event{}, io.EOF
}

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }
