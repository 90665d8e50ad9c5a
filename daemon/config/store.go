package config

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kcd-project/kcd/store"
)

// StoreConfig chooses the metadata store's backend when this node
// bootstraps a new cluster (--store, --store-dsn, --store-setting; in YAML
// store: {backend, dsn, settings}). Once the cluster exists, the active
// backend and its settings live in Raft and these are not read again.
//
// Values may hold references, ${env:NAME} and ${file:PATH}, which each node
// resolves when it opens the backend (store.ResolveSettings): the cluster
// keeps the reference, not the secret. String, GoString and LogValue mask
// every literal secret (store.MaskSettings).
type StoreConfig struct {
	// Backend is a registered backend's name: raft (the default), mysql,
	// postgres, or a third-party one built into the binary.
	Backend string `yaml:"backend"`
	// DSN is the backend's data source name, the setting "dsn".
	DSN string `yaml:"dsn"`
	// Settings are the backend's other settings.
	Settings map[string]string `yaml:"settings"`
}

// DefaultStoreBackend is the backend a cluster starts with unless told.
const DefaultStoreBackend = "raft"

// Limits of the store settings, so that a configuration cannot make the
// Raft record of the active backend grow without bound.
const (
	MaxStoreSettings     = 64
	MaxStoreSettingKey   = 128
	MaxStoreSettingValue = 4096
)

const storeSettingFlag = "store-setting"

var (
	backendNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$`)
	settingKeyRE  = regexp.MustCompile(`^[A-Za-z0-9_.\-]+$`)
)

// BackendSettings returns the settings the backend is opened with: Settings
// and, when set, DSN as "dsn". References are not resolved.
func (s StoreConfig) BackendSettings() map[string]string {
	out := maps.Clone(s.Settings)
	if s.DSN != "" {
		if out == nil {
			out = map[string]string{}
		}
		out["dsn"] = s.DSN
	}
	return out
}

// String shows the store configuration with its secrets masked.
func (s StoreConfig) String() string {
	var b strings.Builder
	b.WriteString("backend=" + s.Backend)
	masked := store.MaskSettings(s.BackendSettings())
	for _, k := range slices.Sorted(maps.Keys(masked)) {
		b.WriteString(" " + k + "=" + strconv.Quote(masked[k]))
	}
	return b.String()
}

// GoString is String, so that %#v shows no secret either.
func (s StoreConfig) GoString() string { return "config.StoreConfig{" + s.String() + "}" }

// LogValue logs the store configuration with its secrets masked.
func (s StoreConfig) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("backend", s.Backend)}
	masked := store.MaskSettings(s.BackendSettings())
	for _, k := range slices.Sorted(maps.Keys(masked)) {
		attrs = append(attrs, slog.String(k, masked[k]))
	}
	return slog.GroupValue(attrs...)
}

// addSettings adds KEY=VALUE entries, later ones winning. An error never
// shows a value.
func (s *StoreConfig) addSettings(entries []string) error {
	var errs []error
	for _, e := range entries {
		k, v, ok := strings.Cut(e, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			errs = append(errs, errors.New("a store setting is KEY=VALUE"))
			continue
		}
		if s.Settings == nil {
			s.Settings = map[string]string{}
		}
		s.Settings[k] = v
	}
	return errors.Join(errs...)
}

// splitSettings splits the comma-separated KEY=VALUE entries of
// KCD_STORE_SETTING. A comma followed by something that is not KEY= is
// part of the value ("hosts=a,b,pool=8" is hosts=a,b and pool=8).
func splitSettings(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		k, _, ok := strings.Cut(p, "=")
		if len(out) > 0 && (!ok || !settingKeyRE.MatchString(strings.TrimSpace(k))) {
			out[len(out)-1] += "," + p
			continue
		}
		if strings.TrimSpace(p) == "" && len(out) == 0 {
			continue
		}
		out = append(out, p)
	}
	return out
}

// shown is how an error shows the value v of the setting name: not at all
// when it may be a secret.
func shown(name, v string) string {
	switch name {
	case "join-token", "store-dsn", storeSettingFlag, "producer", "consumer":
		return "(value hidden)"
	}
	return strconv.Quote(v)
}

// validate checks the store settings; that the backend is registered is
// checked at start, where the backends are known. No error shows a value.
func (s *StoreConfig) validate() []error {
	var errs []error
	switch {
	case s.Backend == "":
		errs = append(errs, errors.New("store must name a backend (raft by default)"))
	case !backendNameRE.MatchString(s.Backend):
		errs = append(errs, fmt.Errorf("store %q is not a backend name (letters, digits, '_', '-', '.')", s.Backend))
	}
	if s.Backend == DefaultStoreBackend && (s.DSN != "" || len(s.Settings) > 0) {
		errs = append(errs, errors.New("store raft takes no store-dsn or store settings: they are for the other backends"))
	}
	if _, dup := s.Settings["dsn"]; dup && s.DSN != "" {
		errs = append(errs, errors.New("store-dsn and the store setting dsn exclude each other"))
	}
	if len(s.Settings) > MaxStoreSettings {
		errs = append(errs, fmt.Errorf("%d store settings are more than %d", len(s.Settings), MaxStoreSettings))
	}
	if len(s.DSN) > MaxStoreSettingValue {
		errs = append(errs, fmt.Errorf("store-dsn is longer than %d bytes", MaxStoreSettingValue))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Settings)) {
		switch {
		case len(k) > MaxStoreSettingKey:
			errs = append(errs, fmt.Errorf("store setting %.32q... is longer than %d bytes", k, MaxStoreSettingKey))
		case !settingKeyRE.MatchString(k):
			errs = append(errs, fmt.Errorf("store setting %q: a key has letters, digits, '_', '-' and '.' only", k))
		case len(s.Settings[k]) > MaxStoreSettingValue:
			errs = append(errs, fmt.Errorf("store setting %q is longer than %d bytes", k, MaxStoreSettingValue))
		}
	}
	if err := store.CheckSettings(s.BackendSettings()); err != nil {
		errs = append(errs, err)
	}
	return errs
}
