package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// base is a configuration that passes Validate.
func base() Config {
	c := Default()
	c.DevKafka = true
	return c
}

func TestStoreDefault(t *testing.T) {
	c, err := Load("", envOf(map[string]string{"KCD_DEV_KAFKA": "true"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Store.Backend != "raft" || c.Store.DSN != "" || c.Store.Settings != nil || c.Store.BackendSettings() != nil {
		t.Fatalf("default store: %#v", c.Store)
	}
}

func TestStoreFromFileEnvFlags(t *testing.T) {
	path := writeFile(t, `
dev-kafka: true
store:
  backend: postgres
  dsn: postgres://kcd:${env:PGPW}@db/kcd
  settings:
    pool-size: "8"
    schema: kcd
`)
	for _, tc := range []struct {
		name  string
		env   map[string]string
		flags []string
		want  StoreConfig
	}{
		{"file", nil, nil, StoreConfig{"postgres", "postgres://kcd:${env:PGPW}@db/kcd", map[string]string{"pool-size": "8", "schema": "kcd"}}},
		{"env", map[string]string{
			"KCD_STORE":         "mysql",
			"KCD_STORE_DSN":     "kcd:${file:/run/secrets/db}@tcp(db:3306)/kcd",
			"KCD_STORE_SETTING": "pool-size=16,hosts=a,b,tls=skip-verify",
		}, nil, StoreConfig{"mysql", "kcd:${file:/run/secrets/db}@tcp(db:3306)/kcd", map[string]string{"pool-size": "16", "schema": "kcd", "hosts": "a,b", "tls": "skip-verify"}}},
		{"flags over env", map[string]string{"KCD_STORE": "mysql", "KCD_STORE_SETTING": "pool-size=16"},
			[]string{"--store", "custom", "--store-dsn", "${env:DSN}", "--store-setting", "pool-size=32", "--store-setting", "opts=a=1,b=2", "--store-setting", "empty="},
			StoreConfig{"custom", "${env:DSN}", map[string]string{"pool-size": "32", "schema": "kcd", "opts": "a=1,b=2", "empty": ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("kcd", pflag.ContinueOnError)
			flags := RegisterFlags(fs, Default())
			if err := fs.Parse(tc.flags); err != nil {
				t.Fatal(err)
			}
			c, err := Load(path, envOf(tc.env), flags)
			if err != nil {
				t.Fatal(err)
			}
			if c.Store.Backend != tc.want.Backend || c.Store.DSN != tc.want.DSN || !maps.Equal(c.Store.Settings, tc.want.Settings) {
				t.Fatalf("store = %q %q %q, want %q %q %q", c.Store.Backend, c.Store.DSN, c.Store.Settings, tc.want.Backend, tc.want.DSN, tc.want.Settings)
			}
			bs := c.Store.BackendSettings()
			if bs["dsn"] != tc.want.DSN || len(bs) != len(tc.want.Settings)+1 {
				t.Fatalf("BackendSettings() = %q", bs)
			}
		})
	}
}

func TestSplitSettings(t *testing.T) {
	for in, want := range map[string][]string{
		"":                      nil,
		"a=1":                   {"a=1"},
		"a=1,b=2":               {"a=1", "b=2"},
		"hosts=a,b,pool=8":      {"hosts=a,b", "pool=8"},
		"opts=x=1,y=2":          {"opts=x=1", "y=2"},
		"a=1,,b=2":              {"a=1,", "b=2"},
		"pw=${env:X},dsn=a,b=c": {"pw=${env:X}", "dsn=a", "b=c"},
		"broken":                {"broken"},
	} {
		if got := splitSettings(in); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("splitSettings(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStoreValidate(t *testing.T) {
	long := strings.Repeat("x", MaxStoreSettingValue+1)
	many := map[string]string{}
	for i := range MaxStoreSettings + 1 {
		many[fmt.Sprint("k", i)] = "v"
	}
	for _, tc := range []struct {
		name string
		s    StoreConfig
		want string // "" when valid
	}{
		{"raft", StoreConfig{Backend: "raft"}, ""},
		{"mysql", StoreConfig{Backend: "mysql", DSN: "kcd:${env:PW}@tcp(db:3306)/kcd"}, ""},
		{"third party", StoreConfig{Backend: "acme.kv-2", Settings: map[string]string{"endpoint": "x"}}, ""},
		{"no backend", StoreConfig{}, "store must name a backend"},
		{"bad name", StoreConfig{Backend: "my sql"}, `store "my sql" is not a backend name`},
		{"raft with dsn", StoreConfig{Backend: "raft", DSN: "x"}, "store raft takes no store-dsn"},
		{"raft with settings", StoreConfig{Backend: "raft", Settings: map[string]string{"a": "b"}}, "store raft takes no store-dsn"},
		{"dsn twice", StoreConfig{Backend: "mysql", DSN: "a", Settings: map[string]string{"dsn": "b"}}, "exclude each other"},
		{"bad reference", StoreConfig{Backend: "mysql", DSN: "kcd:${oops}@tcp(db)/kcd"}, `store setting "dsn": malformed reference`},
		{"unknown reference", StoreConfig{Backend: "mysql", Settings: map[string]string{"password": "${vault:x}"}}, `store setting "password": unknown reference kind "vault"`},
		{"long dsn", StoreConfig{Backend: "mysql", DSN: long}, "store-dsn is longer than"},
		{"long value", StoreConfig{Backend: "mysql", Settings: map[string]string{"a": long}}, `store setting "a" is longer than`},
		{"bad key", StoreConfig{Backend: "mysql", Settings: map[string]string{"a b": "1"}}, `store setting "a b": a key has`},
		{"too many", StoreConfig{Backend: "mysql", Settings: many}, "65 store settings are more than 64"},
	} {
		c := base()
		c.Store = tc.s
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// No error, String, %v, %+v, %#v or log line shows a literal secret of the
// store settings.
func TestStoreSecretsNeverShown(t *testing.T) {
	const secret = "Sup3rS3cret"
	c := base()
	c.Store = StoreConfig{
		Backend:  "mysql",
		DSN:      "kcd:" + secret + "@tcp(db:3306)/kcd",
		Settings: map[string]string{"password": secret, "sslkey": secret, "pool-size": "8", "url": "postgres://u:" + secret + "@h/db", "ref": "${env:KCD_DB_PASSWORD}"},
	}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("start", "store", c.Store)
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("start", "store", c.Store)
	for what, text := range map[string]string{
		"String": c.Store.String(),
		"%v":     fmt.Sprintf("%v", c),
		"%+v":    fmt.Sprintf("%+v", c),
		"%#v":    fmt.Sprintf("%#v", c),
		"%s":     fmt.Sprintf("%s", c.Store),
		"log":    logged.String(),
	} {
		if strings.Contains(text, secret) {
			t.Errorf("%s shows the secret: %s", what, text)
		}
		if !strings.Contains(text, "mysql") || !strings.Contains(text, "tcp(db:3306)") || !strings.Contains(text, "${env:KCD_DB_PASSWORD}") {
			t.Errorf("%s lost what is no secret: %s", what, text)
		}
	}

	// Errors of the environment and the flags do not echo values either.
	fs := pflag.NewFlagSet("kcd", pflag.ContinueOnError)
	flags := RegisterFlags(fs, Default())
	if err := fs.Parse([]string{"--store-setting", secret}); err != nil {
		t.Fatal(err)
	}
	_, err := Load("", envOf(map[string]string{"KCD_DEV_KAFKA": "true", "KCD_STORE": "mysql", "KCD_STORE_SETTING": "x" + secret}), flags)
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "KEY=VALUE") {
		t.Fatalf("Load: %v", err)
	}
	// kcd --help shows no DSN given in the environment as a default.
	fs = pflag.NewFlagSet("kcd", pflag.ContinueOnError)
	def := Default()
	def.Store = c.Store
	RegisterFlags(fs, def)
	if usage := fs.FlagUsages(); strings.Contains(usage, secret) || !strings.Contains(usage, "--store-dsn") || !strings.Contains(usage, "--store-setting") {
		t.Fatalf("usage:\n%s", usage)
	}
}
