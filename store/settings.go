package store

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A backend's settings (a DSN, credentials, options) are a map of strings.
// A value may hold references that each node resolves when it opens the
// backend, so that the cluster stores and shows the reference, never the
// secret:
//
//	${env:NAME}   the environment variable NAME of the node's process
//	${file:PATH}  the content of the file PATH, one trailing newline trimmed
//	$${           a literal "${"
//
// A reference is the whole value or part of it, as in
// "kcd:${env:KCD_DB_PASSWORD}@tcp(db:3306)/kcd".

// Redacted replaces a secret in what kcd shows: settings in answers and
// logs (MaskSettings), error messages and log lines (MaskString).
const Redacted = "[redacted]"

// MaxReferencedFile bounds the size of a file named by ${file:PATH}.
const MaxReferencedFile = 64 << 10

// ResolveSettings returns settings with every reference replaced by what it
// names. An error names the setting and the reference, never a value.
func ResolveSettings(settings map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(settings))
	var errs []error
	for _, k := range sortedKeys(settings) {
		parts, err := parseValue(settings[k])
		if err != nil {
			errs = append(errs, fmt.Errorf("store setting %q: %w", k, err))
			continue
		}
		var b strings.Builder
		for _, p := range parts {
			if p.ref == "" {
				b.WriteString(p.text)
				continue
			}
			v, err := resolveRef(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("store setting %q: %s: %w", k, p.ref, err))
				continue
			}
			b.WriteString(v)
		}
		out[k] = b.String()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// CheckSettings reports malformed references (an unknown kind, a missing
// "}", an empty name) without resolving any.
func CheckSettings(settings map[string]string) error {
	var errs []error
	for _, k := range sortedKeys(settings) {
		if _, err := parseValue(settings[k]); err != nil {
			errs = append(errs, fmt.Errorf("store setting %q: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// MaskSettings returns settings as they may be shown: references as
// written, literal secrets replaced by Redacted. A literal is a secret when
// it is the value of a key that names one (password, secret, token, key...),
// the password of a URL or MySQL DSN (user:password@...), or the value of
// such a key inside a value (password=... in a libpq string or a query).
// A value that holds a malformed reference is redacted whole.
func MaskSettings(settings map[string]string) map[string]string {
	if settings == nil {
		return nil
	}
	out := make(map[string]string, len(settings))
	for k, v := range settings {
		out[k] = maskValue(k, v)
	}
	return out
}

// MaskString returns s with every secret of settings replaced by Redacted:
// the whole values (of at least 4 bytes: shorter ones are rarely secrets
// and would make text unreadable) and the secrets inside them as
// MaskSettings finds them, also percent-decoded. settings are the resolved
// ones; for log lines and error messages that may echo them.
func MaskString(s string, settings map[string]string) string {
	for _, secret := range secretsOf(settings) {
		s = strings.ReplaceAll(s, secret, Redacted)
	}
	return s
}

// part is a literal text or a reference of a setting's value.
type part struct {
	text string // a literal
	ref  string // a reference as written, "${env:NAME}"
	kind string // env or file
	name string // NAME or PATH
}

// parseValue splits v into literals and references.
func parseValue(v string) ([]part, error) {
	var parts []part
	var lit strings.Builder
	for i := 0; i < len(v); {
		switch {
		case strings.HasPrefix(v[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(v[i:], "${"):
			end := strings.IndexByte(v[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("reference at byte %d has no closing }", i)
			}
			ref := v[i : i+end+1]
			kind, name, ok := strings.Cut(ref[2:len(ref)-1], ":")
			if !ok || (kind != "env" && kind != "file") {
				// Not echoed: it may be a literal secret that starts with "${".
				what := fmt.Sprintf("malformed reference at byte %d", i)
				if ok && identRE.MatchString(kind) {
					what = fmt.Sprintf("unknown reference kind %q", kind)
				}
				return nil, fmt.Errorf("%s: use ${env:NAME} or ${file:PATH}, or $${ for a literal ${", what)
			}
			if name == "" {
				return nil, fmt.Errorf("%s: empty %s name", ref, kind)
			}
			if lit.Len() > 0 {
				parts = append(parts, part{text: lit.String()})
				lit.Reset()
			}
			parts = append(parts, part{ref: ref, kind: kind, name: name})
			i += end + 1
		default:
			lit.WriteByte(v[i])
			i++
		}
	}
	if lit.Len() > 0 {
		parts = append(parts, part{text: lit.String()})
	}
	return parts, nil
}

// identRE matches a reference kind that may be shown.
var identRE = regexp.MustCompile(`^[a-z]{1,16}$`)

func resolveRef(p part) (string, error) {
	switch p.kind {
	case "env":
		v, ok := os.LookupEnv(p.name)
		if !ok {
			return "", errors.New("environment variable not set")
		}
		return v, nil
	default: // file
		f, err := os.Open(p.name)
		if err != nil {
			return "", err
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, MaxReferencedFile+1))
		if err != nil {
			// The path is the reference's own: no value in the message.
			return "", fmt.Errorf("read: %w", err)
		}
		if len(data) > MaxReferencedFile {
			return "", fmt.Errorf("file is larger than %d bytes", MaxReferencedFile)
		}
		s := string(data)
		s = strings.TrimSuffix(s, "\n")
		s = strings.TrimSuffix(s, "\r")
		return s, nil
	}
}

// secretKey tells whether a setting's key, or a parameter's name inside a
// value, names a secret.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"password", "passwd", "secret", "token", "credential"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	words := strings.FieldsFunc(k, func(r rune) bool { return r == '-' || r == '_' || r == '.' || r == ' ' })
	for _, w := range words {
		// key, keys, apikey, sslkey, private_key; not keyspace.
		if w == "pwd" || w == "pass" || strings.HasSuffix(w, "key") || strings.HasSuffix(w, "keys") {
			return true
		}
	}
	return false
}

// placeholder marks a reference while a value is masked: it holds none of
// the characters the DSN parsing looks at.
func placeholder(i int) string { return "\x00" + strconv.Itoa(i) + "\x00" }

// maskValue masks the literal secrets of the value v of key k.
func maskValue(k, v string) string {
	parts, err := parseValue(v)
	if err != nil || strings.Contains(v, "\x00") {
		// A NUL in a literal would pass for a placeholder, and part of
		// the literal would be shown (found by FuzzParseValue).
		return Redacted
	}
	// Mask with each reference replaced by a placeholder, so that a
	// reference is kept as written and its own characters (a path's "/")
	// do not confuse the parsing; escapes are kept as written.
	var b strings.Builder
	var refs []string
	for _, p := range parts {
		if p.ref != "" {
			b.WriteString(placeholder(len(refs)))
			refs = append(refs, p.ref)
		} else {
			b.WriteString(strings.ReplaceAll(p.text, "${", "$${"))
		}
	}
	masked := b.String()
	if secretKey(k) {
		masked = redactLiterals(masked)
	} else {
		masked = maskSecrets(masked, redactLiterals)
	}
	for i, ref := range refs {
		masked = strings.Replace(masked, placeholder(i), ref, 1)
	}
	return masked
}

// placeholderRE matches a placeholder.
var placeholderRE = regexp.MustCompile("\x00[0-9]+\x00")

// redactLiterals replaces what s holds besides placeholders by Redacted:
// "lit<ref>" becomes "[redacted]<ref>".
func redactLiterals(s string) string {
	locs := placeholderRE.FindAllStringIndex(s, -1)
	var b strings.Builder
	last := 0
	for _, l := range locs {
		if l[0] > last {
			b.WriteString(Redacted)
		}
		b.WriteString(s[l[0]:l[1]])
		last = l[1]
	}
	if last < len(s) {
		b.WriteString(Redacted)
	}
	return b.String()
}

// paramRE matches name=value pairs: a libpq connection string
// (password='it\'s' or password=x), a URL query (&password=x), a
// semicolon-separated string (Password=x;).
var paramRE = regexp.MustCompile(`([A-Za-z0-9_.\-]+)\s*=\s*('(?:[^'\\]|\\.)*'|[^\s&;]*)`)

// maskSecrets replaces the secrets inside a value (secretSpans) with what
// repl returns for each; overlapping ones are replaced as one.
func maskSecrets(v string, repl func(secret string) string) string {
	spans := secretSpans(v)
	slices.SortFunc(spans, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
	var b strings.Builder
	last := 0
	for i := 0; i < len(spans); i++ {
		start, end := spans[i][0], spans[i][1]
		for i+1 < len(spans) && spans[i+1][0] < end {
			i++
			end = max(end, spans[i][1])
		}
		b.WriteString(v[last:start])
		b.WriteString(repl(v[start:end]))
		last = end
	}
	b.WriteString(v[last:])
	return b.String()
}

// secretSpans locates the secrets inside a value, each as [start, end): a
// DSN's password and the values of secret parameters, all found in v as
// written, so that one's guess cannot hide another (in
// "host=::1 password='p@ss'" the DSN guess takes ":1 ... 'p", the
// parameter 'p@ss': found by FuzzMaskSettingsHidesPassword).
func secretSpans(v string) [][2]int {
	var spans [][2]int
	if start, end, ok := dsnPassword(v); ok {
		spans = append(spans, [2]int{start, end})
	}
	for pos := 0; pos < len(v); {
		m := paramRE.FindStringSubmatchIndex(v[pos:])
		if m == nil {
			break
		}
		for i := range m {
			m[i] += pos
		}
		if !secretKey(v[m[2]:m[3]]) || m[4] == m[5] {
			// The value of another parameter is searched too: in
			// "a=b?password=x" it holds the secret one.
			pos = m[4]
			continue
		}
		spans = append(spans, [2]int{m[4], m[5]})
		pos = m[5]
	}
	return spans
}

// dsnPassword locates the password of a URL (scheme://user:password@host/...)
// or a MySQL DSN (user:password@tcp(host)/db?params). The password may hold
// '@', '/', '?' and ':': the user info ends at the last '@' before the
// parameters, which start at the first '?' after the last '/'. When that
// guess is wrong it masks more than the password, never less.
func dsnPassword(v string) (start, end int, ok bool) {
	region := v
	if slash := strings.LastIndexByte(v, '/'); slash >= 0 {
		if q := strings.IndexByte(v[slash:], '?'); q >= 0 {
			region = v[:slash+q]
		}
	}
	at := strings.LastIndexByte(region, '@')
	if at < 0 {
		return 0, 0, false
	}
	userStart := 0
	if i := strings.Index(region[:at], "://"); i >= 0 && validScheme(region[:i]) {
		userStart = i + 3
	}
	colon := strings.IndexByte(region[userStart:at], ':')
	if colon < 0 && userStart > 0 && mysqlAddr(region[at+1:]) {
		// Not a URL with a user alone but a MySQL DSN whose password
		// starts with "//": "a://pw@tcp(host)/db" (found by
		// FuzzMaskSettingsHidesPassword).
		userStart = 0
		colon = strings.IndexByte(region[:at], ':')
	}
	if colon < 0 {
		return 0, 0, false
	}
	start = userStart + colon + 1
	if start == at {
		return 0, 0, false // "user:@host": an empty password
	}
	return start, at, true
}

// mysqlAddr tells whether s starts as a MySQL DSN's address does after
// its '@': a protocol name and '(' ("tcp(host:3306)", "unix(/path)"),
// which no URL's host holds.
func mysqlAddr(s string) bool {
	i := strings.IndexByte(s, '(')
	if i <= 0 {
		return false
	}
	for _, c := range s[:i] {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

func validScheme(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return false
		}
	}
	return true
}

// secretsOf returns the texts MaskString replaces, longest first, so that a
// secret that contains another goes whole.
func secretsOf(settings map[string]string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= minRedactLen && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for k, v := range settings {
		add(v)
		if secretKey(k) {
			continue
		}
		for _, sp := range secretSpans(v) {
			secret := v[sp[0]:sp[1]]
			add(secret)
			if u, err := url.PathUnescape(secret); err == nil {
				add(u)
			}
			if u, err := url.QueryUnescape(secret); err == nil {
				add(u)
			}
			if len(secret) >= 2 && secret[0] == '\'' && secret[len(secret)-1] == '\'' {
				add(secret[1 : len(secret)-1])
				add(unquote(secret[1 : len(secret)-1])) // as the driver reads it
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(b), len(a)), strings.Compare(a, b))
	})
	return out
}

// unquote reads the inside of a libpq quoted value: a backslash escapes
// the character after it.
func unquote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
