// Package secrets keeps the secrets of connector configs out of kcd's
// store, answers and logs: config providers resolve references such as
// ${file:/etc/kcd/db.properties:password} inside the worker that runs a
// connector or task (as Kafka Connect's config.providers do), task configs
// keep the references (ReverseTransform), and a Masker hides secret values
// in log lines, statuses and error messages.
package secrets

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxFileSize bounds what a provider reads of one file: a properties file
// of the file provider, a file of the directory provider.
const MaxFileSize = 256 << 10

// refRE is Kafka Connect's ConfigTransformer pattern: ${provider:[path:]key}.
// The path is optional and ends at the first ':' after the provider.
var refRE = regexp.MustCompile(`\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}`)

// HasReference tells whether v holds a reference, as Kafka Connect's
// pattern finds one.
func HasReference(v string) bool { return refRE.MatchString(v) }

// Provider is one of kcd's built-in config providers.
type Provider interface {
	// Get returns the values of keys under path ("" when the reference has
	// none). A key it cannot find is an error naming it, never a value.
	Get(path string, keys []string) (map[string]string, error)
}

// Providers are the config providers of a worker (--config-providers).
type Providers struct {
	byName map[string]Provider
	paths  *paths
}

// paths confine what the file and directory providers read.
type paths struct {
	allowed   []string // empty: any
	protected []string // never, whatever allowed says
}

// Names of the built-in providers.
const (
	FileProvider      = "file"
	EnvProvider       = "env"
	DirectoryProvider = "directory"
)

// NewProviders returns the providers named (file, env, directory).
// allowedPaths, when not empty, confine the file and directory providers
// to these absolute paths and what is below them (Kafka Connect's
// allowed.paths).
func NewProviders(names, allowedPaths []string) (*Providers, error) {
	var allowed []string
	for _, p := range allowedPaths {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("config provider allowed path %q is not absolute", p)
		}
		allowed = append(allowed, filepath.Clean(p))
	}
	ps := &Providers{byName: map[string]Provider{}, paths: &paths{allowed: allowed}}
	for _, n := range names {
		switch n = strings.TrimSpace(n); n {
		case "":
		case FileProvider:
			ps.byName[n] = fileProvider{ps.paths}
		case EnvProvider:
			ps.byName[n] = envProvider{}
		case DirectoryProvider:
			ps.byName[n] = dirProvider{ps.paths}
		default:
			return nil, fmt.Errorf("unknown config provider %q: kcd has file, env and directory", n)
		}
	}
	return ps, nil
}

// Protect keeps the file and directory providers away from the node's own
// secrets (its data dir, key and token files): a reference to a path at or
// below one of these, also through a symbolic link, is refused, so that
// whoever may write connector configs cannot have a connector read them.
// Call it before the providers are used.
func (p *Providers) Protect(paths ...string) {
	for _, path := range paths {
		if path == "" {
			continue
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		p.paths.protected = append(p.paths.protected, filepath.Clean(path))
		if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
			p.paths.protected = append(p.paths.protected, real)
		}
	}
}

// Names lists the configured providers, sorted.
func (p *Providers) Names() []string {
	if p == nil {
		return nil
	}
	out := make([]string, 0, len(p.byName))
	for n := range p.byName {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// ref is one reference found in a value.
type ref struct {
	text, provider, path, key string
}

func refsOf(v string) []ref {
	var out []ref
	for _, m := range refRE.FindAllStringSubmatch(v, -1) {
		out = append(out, ref{text: m[0], provider: m[1], path: m[3], key: m[4]})
	}
	return out
}

// Transform returns cfg with every reference of a configured provider
// replaced by its value, in one pass (a value that holds a reference is not
// resolved again), as Kafka Connect's ConfigTransformer does. A reference
// to a provider that is not configured stays as written. A reference that
// cannot be resolved (no such file, key or variable, a path outside the
// allowed ones) is an error that names the setting and the reference,
// never a value.
func (p *Providers) Transform(cfg map[string]string) (map[string]string, error) {
	if cfg == nil {
		return nil, nil
	}
	out := make(map[string]string, len(cfg))
	// One Get per provider and path, with all its keys.
	type pp struct{ provider, path string }
	want := map[pp][]string{}
	for _, v := range cfg {
		for _, r := range refsOf(v) {
			pr := p.provider(r.provider)
			if pr == nil {
				continue
			}
			if rf, ok := pr.(refuser); ok && rf.refuse(r.path, r.key) != nil {
				continue
			}
			k := pp{r.provider, r.path}
			if !slices.Contains(want[k], r.key) {
				want[k] = append(want[k], r.key)
			}
		}
	}
	got := map[pp]map[string]string{}
	failed := map[pp]error{}
	for k, keys := range want {
		data, err := p.byName[k.provider].Get(k.path, keys)
		if err != nil {
			failed[k] = err
			continue
		}
		got[k] = data
	}
	var errs []error
	for _, name := range sortedKeys(cfg) {
		v := cfg[name]
		var ferr error
		res := refRE.ReplaceAllStringFunc(v, func(text string) string {
			m := refRE.FindStringSubmatch(text)
			r := ref{text: m[0], provider: m[1], path: m[3], key: m[4]}
			pr := p.provider(r.provider)
			if pr == nil {
				return text
			}
			if rf, ok := pr.(refuser); ok {
				if err := rf.refuse(r.path, r.key); err != nil {
					ferr = cmpErr(ferr, fmt.Errorf("config %q: %s: %w", name, r.text, err))
					return text
				}
			}
			k := pp{r.provider, r.path}
			if err := failed[k]; err != nil {
				ferr = cmpErr(ferr, fmt.Errorf("config %q: %s: %w", name, r.text, err))
				return text
			}
			val, ok := got[k][r.key]
			if !ok {
				ferr = cmpErr(ferr, fmt.Errorf("config %q: %s: %s", name, r.text, missing(r)))
				return text
			}
			return val
		})
		if ferr != nil {
			errs = append(errs, ferr)
		}
		out[name] = res
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (p *Providers) provider(name string) Provider {
	if p == nil {
		return nil
	}
	return p.byName[name]
}

func missing(r ref) string {
	switch r.provider {
	case EnvProvider:
		return "environment variable not set"
	case DirectoryProvider:
		return "no such file in the directory"
	default:
		return "no such key in the file"
	}
}

// ReverseTransform returns task configs with the value of every key whose
// raw connector config value holds a reference set back to that reference,
// as Kafka Connect's AbstractHerder.reverseTransform does, so that stored
// task configs keep references instead of resolved secrets.
func ReverseTransform(raw map[string]string, tasks []map[string]string) []map[string]string {
	var refKeys []string
	for k, v := range raw {
		if v != "" && HasReference(v) {
			refKeys = append(refKeys, k)
		}
	}
	out := make([]map[string]string, len(tasks))
	for i, tc := range tasks {
		if len(refKeys) == 0 {
			out[i] = tc
			continue
		}
		c := make(map[string]string, len(tc))
		for k, v := range tc {
			c[k] = v
		}
		for _, k := range refKeys {
			if _, ok := c[k]; ok {
				c[k] = raw[k]
			}
		}
		out[i] = c
	}
	return out
}

// under tells whether path is dir or below it.
func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator)) || dir == string(filepath.Separator)
}

// check returns path cleaned when it may be read: at or below one of the
// allowed paths when there are any, and not at or below a protected one,
// as written or once its symbolic links are resolved.
func (ps *paths) check(path string) (string, error) {
	if path == "" {
		return "", errors.New("the reference names no path")
	}
	clean := filepath.Clean(path)
	if len(ps.allowed) > 0 {
		ok := false
		for _, a := range ps.allowed {
			ok = ok || filepath.IsAbs(clean) && under(clean, a)
		}
		if !ok {
			return "", errors.New("the path is not under any of --config-provider-allowed-paths")
		}
	}
	real, err := filepath.EvalSymlinks(clean)
	if err != nil {
		real = clean // it does not exist (yet): reading it fails anyway
	}
	if abs, err := filepath.Abs(clean); err == nil {
		clean = abs
	}
	for _, p := range ps.protected {
		if under(clean, p) || under(real, p) {
			return "", errors.New("the path holds the node's own secrets (data dir, key or token files): no connector may read it")
		}
	}
	return filepath.Clean(path), nil
}

// readBounded reads a regular file of at most MaxFileSize bytes.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, MaxFileSize)
	}
	return data, nil
}

// fileProvider is Kafka Connect's FileConfigProvider: the path is a
// properties file, the key one of its properties.
type fileProvider struct{ paths *paths }

func (p fileProvider) Get(path string, keys []string) (map[string]string, error) {
	path, err := p.paths.check(path)
	if err != nil {
		return nil, err
	}
	data, err := readBounded(path)
	if err != nil {
		// os errors name the path, which is the reference's own.
		return nil, err
	}
	props := ParseProperties(string(data))
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := props[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

// envProvider is Kafka Connect's EnvVarConfigProvider: ${env:NAME}. kcd's
// own variables (KCD_*: join token, store DSN...) are not given out.
type envProvider struct{}

// ProtectedEnvPrefix starts the environment variables no reference reads.
const ProtectedEnvPrefix = "KCD_"

func (envProvider) refuse(_, key string) error {
	if strings.HasPrefix(strings.ToUpper(key), ProtectedEnvPrefix) {
		return fmt.Errorf("%s* variables are kcd's own settings: no connector may read them", ProtectedEnvPrefix)
	}
	return nil
}

// refuser is a Provider that refuses some references outright.
type refuser interface {
	refuse(path, key string) error
}

func (envProvider) Get(path string, keys []string) (map[string]string, error) {
	if path != "" {
		return nil, errors.New("the env provider takes no path: use ${env:NAME}")
	}
	out := map[string]string{}
	for _, k := range keys {
		if (envProvider{}).refuse("", k) != nil {
			continue
		}
		if v, ok := os.LookupEnv(k); ok {
			out[k] = v
		}
	}
	return out, nil
}

// dirProvider is Kafka Connect's DirectoryConfigProvider: the path is a
// directory, the key the name of a regular file in it, the value its
// whole content (Kubernetes secrets mounted as files).
type dirProvider struct{ paths *paths }

func (p dirProvider) Get(path string, keys []string) (map[string]string, error) {
	dir, err := p.paths.check(path)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	out := map[string]string{}
	for _, k := range keys {
		// A file directly in the directory, as Kafka Connect lists it.
		if k == "" || k == "." || k == ".." || strings.ContainsRune(k, filepath.Separator) {
			continue
		}
		file, err := p.paths.check(filepath.Join(dir, k))
		if err != nil {
			return nil, err
		}
		data, err := readBounded(file)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[k] = string(data)
	}
	return out, nil
}

// ParseProperties reads Java properties text: key=value, key:value or
// "key value" lines, # and ! comments, \ line continuations and the
// \t \n \r \f \uXXXX escapes.
func ParseProperties(text string) map[string]string {
	out := map[string]string{}
	// A line ends at \n, \r or \r\n, as in Java (a lone \r ended no line:
	// found by FuzzParseProperties).
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), MaxFileSize+1)
	var logical strings.Builder
	pending := false // a line continues onto the next
	for sc.Scan() {
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if !pending && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		// A line ending in an odd number of backslashes continues.
		n := 0
		for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
			n++
		}
		if n%2 == 1 {
			logical.WriteString(line[:len(line)-1])
			pending = true
			continue
		}
		logical.WriteString(line)
		k, v := splitProperty(logical.String())
		out[k] = v
		logical.Reset()
		pending = false
	}
	if pending {
		k, v := splitProperty(logical.String())
		out[k] = v
	}
	return out
}

func splitProperty(line string) (string, string) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	i = min(i, len(line))
	key, rest := line[:i], line[i:]
	rest = strings.TrimLeft(rest, " \t\f")
	// One '=' or ':' separates, with blanks around it.
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return unescape(key), unescape(rest)
}

func unescape(s string) string {
	if !strings.ContainsRune(s, '\\') {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+4 < len(s) {
				var r rune
				ok := true
				for _, h := range s[i+1 : i+5] {
					r <<= 4
					switch {
					case h >= '0' && h <= '9':
						r |= h - '0'
					case h >= 'a' && h <= 'f':
						r |= h - 'a' + 10
					case h >= 'A' && h <= 'F':
						r |= h - 'A' + 10
					default:
						ok = false
					}
				}
				if ok {
					b.WriteRune(r)
					i += 4
					continue
				}
			}
			b.WriteByte('u')
		default:
			b.WriteByte(s[i])
		}
	}
	if !utf8.ValidString(b.String()) {
		return s
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
