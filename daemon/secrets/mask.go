package secrets

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
)

// Hidden replaces a secret value, as Kafka Connect prints a PASSWORD.
const Hidden = "[hidden]"

// minSecretLen is the shortest value a Masker replaces inside text:
// shorter ones are rarely secrets and would make text unreadable.
const minSecretLen = 4

// SecretKey tells whether a connector config key names a secret: a
// password, secret, token, credential, JAAS config, API or private key,
// user info (basic auth), as the Kafka clients' and common connectors'
// PASSWORD settings are named.
func SecretKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"password", "passwd", "secret", "token", "credential", "jaas",
		"user.info", "userinfo", "apikey", "api.key", "api_key", "private.key", "private_key",
		"keystore.key", "access.key", "access_key", "pwd"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// MaskConfig returns cfg as it may be logged: the values of secret keys
// (SecretKey or password, as the connector's ConfigDef says) replaced by
// Hidden; references are kept, they hold no secret.
func MaskConfig(cfg map[string]string, password func(string) bool) map[string]string {
	if cfg == nil {
		return nil
	}
	out := make(map[string]string, len(cfg))
	for k, v := range cfg {
		if v != "" && (SecretKey(k) || password != nil && password(k)) && !onlyReferences(v) {
			v = Hidden
		}
		out[k] = v
	}
	return out
}

// onlyReferences tells whether v is references and nothing else (blanks
// around them aside). A blank value without a reference is a literal: a
// password of blanks was shown (found by FuzzMasker).
func onlyReferences(v string) bool {
	return HasReference(v) && strings.TrimSpace(refRE.ReplaceAllString(v, "")) == ""
}

// Masker replaces secret values inside text (log lines, error messages,
// status traces) by Hidden. The zero Masker and a nil one mask nothing.
type Masker struct {
	secrets []string // longest first, so that a secret that holds another goes whole
}

// NewMasker returns a Masker of a connector's configs: raw is the config as
// stored (with references), resolved the same with references resolved;
// password tells the keys the connector's ConfigDef types PASSWORD. It masks
// the values of secret keys of both, every value that came from a
// reference, and the resolved values of references inside values.
func NewMasker(password func(string) bool, configs ...map[string]string) *Masker {
	m := &Masker{}
	add := func(s string) {
		if len(s) >= minSecretLen && !slices.Contains(m.secrets, s) {
			m.secrets = append(m.secrets, s)
		}
	}
	var raw map[string]string
	for i, cfg := range configs {
		for k, v := range cfg {
			if SecretKey(k) || password != nil && password(k) {
				if !onlyReferences(v) {
					add(v)
				}
			}
			if i == 0 {
				continue
			}
			// A value that differs from the first (raw) config's came from
			// a reference: whatever it holds besides the raw text is secret.
			if rv, ok := raw[k]; ok && rv != v {
				add(v)
				for _, part := range resolvedParts(rv, v) {
					add(part)
				}
			}
		}
		if i == 0 {
			raw = cfg
		}
	}
	slices.SortFunc(m.secrets, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
	})
	return m
}

// resolvedParts returns what replaced each reference of raw in resolved,
// when raw's literal parts can be matched in order.
func resolvedParts(raw, resolved string) []string {
	lits := refRE.Split(raw, -1)
	if len(lits) < 2 || !strings.HasPrefix(resolved, lits[0]) {
		return nil
	}
	var out []string
	rest := resolved[len(lits[0]):]
	for _, lit := range lits[1:] {
		var i int
		if lit == "" {
			i = len(rest)
		} else if i = strings.Index(rest, lit); i < 0 {
			return out
		}
		out = append(out, rest[:i])
		rest = rest[i+len(lit):]
	}
	return out
}

// String returns s with every secret replaced by Hidden.
func (m *Masker) String(s string) string {
	if m == nil {
		return s
	}
	for _, sec := range m.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, Hidden)
		}
	}
	return s
}

// Error returns err with its message masked (nil stays nil). The masked
// error still matches what err matched with errors.Is and errors.As.
func (m *Masker) Error(err error) error {
	if err == nil || m == nil || len(m.secrets) == 0 {
		return err
	}
	msg := err.Error()
	if masked := m.String(msg); masked != msg {
		return &maskedError{msg: masked, err: err}
	}
	return err
}

type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

// MaskingHandler is a slog.Handler that masks the message and the string,
// error and any-valued attributes of every record with the Masker that
// current returns when the record is handled (the connector's config may
// change while loggers derived from it live).
type MaskingHandler struct {
	inner   slog.Handler
	current *atomic.Pointer[Masker]
}

// NewMaskingHandler returns a handler that masks with m's current Masker
// and hands records to inner.
func NewMaskingHandler(inner slog.Handler, m *atomic.Pointer[Masker]) *MaskingHandler {
	return &MaskingHandler{inner: inner, current: m}
}

func (h *MaskingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *MaskingHandler) Handle(ctx context.Context, r slog.Record) error {
	m := h.current.Load()
	if m == nil || len(m.secrets) == 0 {
		return h.inner.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, m.String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(maskAttr(m, a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h *MaskingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	m := h.current.Load()
	masked := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		masked[i] = maskAttr(m, a)
	}
	return &MaskingHandler{inner: h.inner.WithAttrs(masked), current: h.current}
}

func (h *MaskingHandler) WithGroup(name string) slog.Handler {
	return &MaskingHandler{inner: h.inner.WithGroup(name), current: h.current}
}

func maskAttr(m *Masker, a slog.Attr) slog.Attr {
	if m == nil {
		return a
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, m.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]any, len(g))
		for i, ga := range g {
			out[i] = maskAttr(m, ga)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.Any(a.Key, m.Error(x))
		case map[string]string:
			return slog.Any(a.Key, MaskConfig(x, nil))
		default:
			// Anything else is formatted by the handler: mask its text.
			s := v.String()
			if ms := m.String(s); ms != s {
				return slog.String(a.Key, ms)
			}
		}
	}
	return a
}
