package restapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	kcdapi "github.com/kcd-project/kcd/api"
)

// The bodies of /kcd/v1/cluster (see package api).
type (
	ClusterInfo     = kcdapi.ClusterInfo
	CorruptionAlarm = kcdapi.CorruptionAlarm
	ClusterHealth   = kcdapi.ClusterHealth
	MemberInfo      = kcdapi.MemberInfo
	NewMember       = kcdapi.NewMember
	LeaderTransfer  = kcdapi.LeaderTransfer
)

// The reachability of a member.
const (
	Reachable   = kcdapi.Reachable
	Unreachable = kcdapi.Unreachable
	Unknown     = kcdapi.Unknown
)

// Cluster is what the API needs of the Raft group. Methods that change the
// cluster are only called on the leader: the API forwards them there.
type Cluster interface {
	Info(ctx context.Context) (ClusterInfo, error)
	AddMember(ctx context.Context, m NewMember) error
	RemoveMember(ctx context.Context, id uint64) error
	TransferLeader(ctx context.Context, to uint64) (uint64, error)
	// Leader tells whether this node is the leader and, when it is not, the
	// REST URL of the node to forward leader-only requests to ("" while
	// there is no leader).
	Leader() (self bool, forwardTo string)
}

// GET /kcd/v1/cluster; with ?view=local, the answering node's own view of
// reachability, without asking the leader.
func (a *api) clusterInfo(r *http.Request) (int, any, *Error) {
	info, err := a.cluster.Info(r.Context())
	if err != nil {
		return 0, nil, asError(err)
	}
	if r.URL.Query().Get("view") != "local" {
		a.leaderView(r.Context(), &info)
	}
	summarize(&info)
	return http.StatusOK, info, nil
}

// leaderAskTimeout bounds how long a follower waits for the leader's view.
const leaderAskTimeout = 500 * time.Millisecond

// leaderView replaces a follower's view of the members' reachability with
// the leader's: a follower talks only to the leader, the leader to every
// member. When the leader does not answer, the follower's view stays, with
// what it cannot know marked unknown.
func (a *api) leaderView(ctx context.Context, info *ClusterInfo) {
	if info.Self == 0 || info.Leader == 0 || info.Leader == info.Self || info.ReachabilityFrom != info.Self {
		return // the leader's view already, or no leader to ask
	}
	var url string
	for _, m := range info.Members {
		if m.ID == info.Leader {
			url = m.RESTURL
		}
	}
	if url == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, leaderAskTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(url, "/")+"/kcd/v1/cluster?view=local", nil)
	if err != nil {
		return
	}
	res, err := a.forwardClient.Do(req)
	if err != nil {
		a.log.Debug("ask the leader for its view of the members", "leader", info.Leader, "err", err)
		return
	}
	defer res.Body.Close()
	var lv ClusterInfo
	if res.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(res.Body, MaxBody)).Decode(&lv) != nil ||
		lv.Self != info.Leader || lv.Leader != lv.Self {
		return // not the leader's view (any more)
	}
	seen := map[uint64]MemberInfo{}
	for _, m := range lv.Members {
		seen[m.ID] = m
	}
	for i := range info.Members {
		m := &info.Members[i]
		if lm, ok := seen[m.ID]; ok {
			m.Reachability = lm.Reachability
			m.Reachable = lm.Reachable
		}
	}
	info.ReachabilityFrom = lv.Self
}

// summarize fills in the health summary from the members.
func summarize(info *ClusterInfo) {
	h := &info.Health
	h.Voters, h.VotersUp = 0, 0
	for _, m := range info.Members {
		if m.Raft != "voter" {
			continue
		}
		h.Voters++
		if m.Reachability == Reachable {
			h.VotersUp++
		}
	}
	h.Quorum = h.Voters/2 + 1
	h.QuorumOK = info.Leader != 0 && h.Voters > 0 && h.VotersUp >= h.Quorum
	if h.Alarms == nil {
		h.Alarms = []string{}
	}
}

func (a *api) addMember(r *http.Request) (int, any, *Error) {
	var m NewMember
	if e := decodeBody(r, &m); e != nil {
		return 0, nil, e
	}
	if m.ID == 0 || m.PeerURL == "" {
		return 0, nil, Errorf(http.StatusBadRequest, "a new member needs a non-zero id and a peer_url")
	}
	for _, role := range m.Roles {
		if role != "raft" && role != "worker" {
			return 0, nil, Errorf(http.StatusBadRequest, "role %q is not raft or worker", role)
		}
	}
	if m.RESTURL != "" {
		if u, err := url.Parse(m.RESTURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return 0, nil, Errorf(http.StatusBadRequest, "rest_url %q is not an http:// or https:// URL", m.RESTURL)
		}
	}
	if err := a.cluster.AddMember(r.Context(), m); err != nil {
		return 0, nil, asError(err)
	}
	info, err := a.cluster.Info(r.Context())
	if err != nil {
		return 0, nil, asError(err)
	}
	return http.StatusCreated, info, nil
}

func (a *api) removeMember(r *http.Request) (int, any, *Error) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil || id == 0 {
		return 0, nil, Errorf(http.StatusBadRequest, "member id %q is not a positive integer", r.PathValue("id"))
	}
	if e := a.checkMember(r.Context(), id, false); e != nil {
		return 0, nil, e
	}
	if err := a.cluster.RemoveMember(r.Context(), id); err != nil {
		return 0, nil, asError(err)
	}
	return http.StatusNoContent, nil, nil
}

func (a *api) transferLeader(r *http.Request) (int, any, *Error) {
	var req LeaderTransfer
	if r.ContentLength != 0 {
		if e := decodeBody(r, &req); e != nil {
			return 0, nil, e
		}
	}
	if req.To != 0 {
		if e := a.checkMember(r.Context(), req.To, true); e != nil {
			return 0, nil, e
		}
	}
	lead, err := a.cluster.TransferLeader(r.Context(), req.To)
	if err != nil {
		return 0, nil, asError(err)
	}
	return http.StatusOK, LeaderTransfer{Leader: lead}, nil
}

// checkMember refuses a request naming member id that the cluster does
// not have (404), or, with voter, that is not a voter (409): the caller's
// mistake, answered before Raft is asked. When the cluster cannot be read,
// the change itself says what is wrong.
func (a *api) checkMember(ctx context.Context, id uint64, voter bool) *Error {
	info, err := a.cluster.Info(ctx)
	if err != nil {
		return nil
	}
	for _, m := range info.Members {
		if m.ID != id {
			continue
		}
		if voter && m.Raft != "voter" {
			return Errorf(http.StatusConflict, "member %d is a %s, not a voter: only a voter can lead", id, m.Raft)
		}
		return nil
	}
	ids := make([]string, 0, len(info.Members))
	for _, m := range info.Members {
		ids = append(ids, strconv.FormatUint(m.ID, 10))
	}
	return Errorf(http.StatusNotFound, "the cluster has no member %d (its members: %s)", id, strings.Join(ids, ", "))
}

// MaxBody bounds a request body of the API (but the store API's,
// MaxStoreRequest): a larger one is answered 413.
const MaxBody = 4 << 20

// limitBody bounds r's body to MaxBody; tooLarge tells the error of
// reading past it.
func limitBody(r *http.Request) (io.Reader, *Error) {
	if r.ContentLength > MaxBody {
		return nil, bodyTooLarge()
	}
	return http.MaxBytesReader(nil, r.Body, MaxBody), nil
}

func bodyTooLarge() *Error {
	return Errorf(http.StatusRequestEntityTooLarge, "request body is larger than %d bytes (4 MiB), the limit of this API", MaxBody)
}

// bodyError is the answer to an error reading or decoding a body.
func bodyError(err error) *Error {
	if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
		return bodyTooLarge()
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return Errorf(http.StatusBadRequest, "request body: %s must be %s, got a JSON %s", te.Field, jsonKind(te.Type.Kind()), te.Value)
	}
	return Errorf(http.StatusBadRequest, "request body is not valid JSON for this request: %v", err)
}

// jsonKind names what a JSON value of Go kind k must be, for people.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number from 0 up"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another type"
}

func decodeBody(r *http.Request, v any) *Error {
	body, e := limitBody(r)
	if e != nil {
		return e
	}
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	return nil
}

// asError turns an error from the node into the API's error; errors that
// carry no status are 500s.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Errorf(http.StatusInternalServerError, "Request timed out: %v", err)
	}
	return Errorf(http.StatusInternalServerError, "%v", err)
}

// forwardedHeader marks a request forwarded to the leader; it counts hops
// so that a request never circles.
const forwardedHeader = "X-Kcd-Forwarded"

const maxForwardHops = 2

// leaderOnly runs fn on the leader: on any other node the request is sent
// on to the leader and its answer relayed. While there is no leader it
// waits for one, up to leaderWait.
func (a *api) leaderOnly(fn func(*http.Request) (int, any, *Error)) func(*http.Request) (int, any, *Error) {
	return func(r *http.Request) (int, any, *Error) {
		deadline := time.Now().Add(a.leaderWait)
		for {
			self, to := a.cluster.Leader()
			if self {
				return fn(r)
			}
			if to != "" {
				return a.forward(r, to)
			}
			if time.Now().After(deadline) {
				return 0, nil, Errorf(http.StatusServiceUnavailable, "no Raft leader at the moment (waited %v); retry", a.leaderWait)
			}
			select {
			case <-r.Context().Done():
				return 0, nil, asError(r.Context().Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// forwarded is the leader's answer, relayed as it comes: status, content
// type, Retry-After and the whole body, however large.
type forwarded struct {
	res *http.Response
}

// relay writes the leader's answer and closes it. An answer cut off
// midway ends the connection (the client sees a short body, not a
// complete-looking one).
func (f forwarded) relay(w http.ResponseWriter, log func(msg string, args ...any)) {
	defer f.res.Body.Close()
	if ct := f.res.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	if ra := f.res.Header.Get("Retry-After"); ra != "" {
		w.Header().Set("Retry-After", ra)
	}
	if f.res.ContentLength >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(f.res.ContentLength, 10))
	}
	w.WriteHeader(f.res.StatusCode)
	if _, err := io.Copy(w, f.res.Body); err != nil {
		log("relaying the leader's answer failed; closing the connection", "err", err)
		panic(http.ErrAbortHandler)
	}
}

func (a *api) forward(r *http.Request, to string) (int, any, *Error) {
	hops, _ := strconv.Atoi(r.Header.Get(forwardedHeader))
	if hops >= maxForwardHops {
		// Leadership is moving: the same request may succeed in a moment.
		e := Errorf(http.StatusConflict, "Cannot complete request because of a conflicting operation (e.g. leadership change): forwarded %d times without reaching the leader", hops)
		e.RetryAfter = 1
		return 0, nil, e
	}
	lim, e := limitBody(r)
	if e != nil {
		return 0, nil, e
	}
	body, err := io.ReadAll(lim)
	if err != nil {
		if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
			return 0, nil, bodyTooLarge()
		}
		return 0, nil, Errorf(http.StatusBadRequest, "read request body: %v", err)
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, strings.TrimRight(to, "/")+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, Errorf(http.StatusInternalServerError, "forward to the leader: %v", err)
	}
	// The request goes on as this node's (forwardClient authenticates as
	// the node); the caller's Authorization header stays here.
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(forwardedHeader, strconv.Itoa(hops+1))
	if u := requestUser(r); u != "" {
		if p, _ := principalOf(r.Context()); p.Role == roleNode {
			u = r.Header.Get(forwardedUserHeader) // a node's forward of a forward
		}
		if u != "" {
			req.Header.Set(forwardedUserHeader, u)
		}
	}
	res, err := a.forwardClient.Do(req)
	if err != nil {
		return 0, nil, Errorf(http.StatusServiceUnavailable, "forward to the leader at %s: %v", to, err)
	}
	a.log.Debug("forwarded to the leader", "method", r.Method, "path", r.URL.Path, "to", to, "status", res.StatusCode)
	return res.StatusCode, forwarded{res}, nil
}
