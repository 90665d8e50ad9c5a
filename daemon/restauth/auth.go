package restauth

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// Principal is who a request comes from.
type Principal struct {
	// Name is the user's name, or NodeName for a kcd node.
	Name string
	Role Role
	// Method says how the principal proved itself: basic, token,
	// certificate or node.
	Method string
}

// NodeName is the name of the node principal in logs.
const NodeName = "kcd-node"

// The reasons Authenticate refuses a request. Their messages say what is
// wrong, never with which secret.
var (
	// ErrNoCredentials: the request carries no credentials at all.
	ErrNoCredentials = errors.New("authentication required: send HTTP basic credentials, a bearer token or a client certificate")
	// ErrInvalidCredentials: the credentials match no user.
	ErrInvalidCredentials = errors.New("invalid credentials")
	// ErrBusy: too many password checks are waiting; the caller retries.
	ErrBusy = errors.New("too many password checks in progress; retry shortly (a bearer token or a client certificate avoids them)")
)

// MinNodeSecretLen is the shortest node secret accepted.
const MinNodeSecretLen = 32

// ReadNodeSecret reads the cluster's node secret from path: at least
// MinNodeSecretLen bytes, surrounding white space ignored.
func ReadNodeSecret(path string) ([]byte, error) {
	b, err := readBounded(path, 64<<10)
	if err != nil {
		return nil, fmt.Errorf("node token file: %w", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) < MinNodeSecretLen {
		return nil, fmt.Errorf("node token file %s holds %d bytes; the node secret needs at least %d (e.g. head -c 48 /dev/urandom | base64)", path, len(b), MinNodeSecretLen)
	}
	return b, nil
}

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, nil
}

// Config configures an Authenticator.
type Config struct {
	// File is the credentials file; "" means no users (only nodes).
	File string
	// NodeSecret is the cluster's node secret ("" none: no node principal).
	NodeSecret []byte
	// ReloadInterval is how often Run looks for a changed file (default 2 s).
	ReloadInterval time.Duration
	// MaxHashChecks bounds the password hash checks that run at once
	// (default half the CPUs, at least one); MaxHashWaiters bounds those
	// waiting for a turn (default 64), beyond which a request gets ErrBusy.
	MaxHashChecks, MaxHashWaiters int
	// CacheTTL is how long a password check's result is reused (default
	// 1 min); CacheSize bounds the results kept (default 1024).
	CacheTTL  time.Duration
	CacheSize int
	Logger    *slog.Logger
}

// Authenticator authenticates REST requests. It is safe for concurrent use.
type Authenticator struct {
	cfg        Config
	log        *slog.Logger
	users      atomic.Pointer[Users]
	nodeSecret [sha256.Size]byte // hash of the node secret
	hasNode    bool

	slots      chan struct{} // one per hash check running
	waiters    atomic.Int64
	hashChecks atomic.Int64 // password hashes checked, for tests

	cacheKey []byte // HMAC key of the cache's keys, random per process
	mu       sync.Mutex
	cache    map[[sha256.Size]byte]cached

	badDigest [sha256.Size]byte // last broken file, logged once
	hasBad    bool
}

type cached struct {
	user    string
	ok      bool
	expires time.Time
}

// New loads cfg.File and returns its authenticator; a broken file is an
// error (at start nothing older can be kept).
func New(cfg Config) (*Authenticator, error) {
	if cfg.ReloadInterval <= 0 {
		cfg.ReloadInterval = 2 * time.Second
	}
	if cfg.MaxHashChecks <= 0 {
		cfg.MaxHashChecks = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if cfg.MaxHashWaiters <= 0 {
		cfg.MaxHashWaiters = 64
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = time.Minute
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 1024
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &Authenticator{
		cfg: cfg, log: cfg.Logger,
		slots:    make(chan struct{}, cfg.MaxHashChecks),
		cacheKey: make([]byte, 32),
		cache:    map[[sha256.Size]byte]cached{},
	}
	_, _ = rand.Read(a.cacheKey)
	if len(cfg.NodeSecret) > 0 {
		a.nodeSecret, a.hasNode = sha256.Sum256(cfg.NodeSecret), true
	}
	us := &Users{byName: map[string]*User{}, byCert: map[string]*User{}}
	if cfg.File != "" {
		b, err := readBounded(cfg.File, MaxFileSize)
		if err != nil {
			return nil, fmt.Errorf("rest auth file: %w", err)
		}
		if us, err = Parse(b); err != nil {
			return nil, fmt.Errorf("rest auth file %s: %w", cfg.File, err)
		}
	}
	a.users.Store(us)
	return a, nil
}

// Users returns the users in force.
func (a *Authenticator) Users() *Users { return a.users.Load() }

// Run reloads the credentials file whenever it changes, until ctx ends. A
// broken or missing file keeps the users in force and is logged once per
// version.
func (a *Authenticator) Run(ctx context.Context) {
	if a.cfg.File == "" {
		return
	}
	t := time.NewTicker(a.cfg.ReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		a.Reload()
	}
}

// Reload reads the credentials file once and takes it when it changed and
// is valid. It tells whether the users changed. Run calls it; it is not
// safe to call concurrently with itself.
func (a *Authenticator) Reload() bool {
	if a.cfg.File == "" {
		return false
	}
	b, err := readBounded(a.cfg.File, MaxFileSize)
	var digest [sha256.Size]byte
	if err == nil {
		digest = sha256.Sum256(b)
		if digest == a.users.Load().digest {
			a.hasBad = false
			return false
		}
	}
	if a.hasBad && digest == a.badDigest {
		return false // broken the same way as last time: logged already
	}
	var us *Users
	if err == nil {
		us, err = Parse(b)
	}
	if err != nil {
		a.hasBad, a.badDigest = true, digest
		a.log.Warn("rest auth file is broken or unreadable; keeping the users loaded before", "file", a.cfg.File, "err", err)
		return false
	}
	a.hasBad = false
	a.users.Store(us)
	a.mu.Lock()
	clear(a.cache)
	a.mu.Unlock()
	a.log.Info("rest auth file reloaded", "file", a.cfg.File, "users", us.Len())
	return true
}

// Authenticate returns the principal of r: a bearer token (the node secret
// or a user's token), HTTP basic, or else a verified client certificate.
// An Authorization header that fails is not made good by a certificate.
func (a *Authenticator) Authenticate(r *http.Request) (Principal, error) {
	us := a.users.Load()
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, cred, _ := strings.Cut(h, " ")
		cred = strings.TrimSpace(cred)
		switch {
		case strings.EqualFold(scheme, "Bearer"):
			return a.bearer(us, cred)
		case strings.EqualFold(scheme, "Basic"):
			user, pw, ok := r.BasicAuth()
			if !ok {
				return Principal{}, ErrInvalidCredentials
			}
			return a.basic(r.Context(), us, user, pw)
		}
		return Principal{}, fmt.Errorf("%w: unsupported authorization scheme (use Basic or Bearer)", ErrInvalidCredentials)
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		cn := r.TLS.VerifiedChains[0][0].Subject.CommonName
		if u, ok := us.byCert[cn]; ok && cn != "" {
			return Principal{Name: u.Name, Role: u.Role, Method: "certificate"}, nil
		}
		return Principal{}, fmt.Errorf("%w: no user has the client certificate's subject CN %q", ErrInvalidCredentials, cn)
	}
	return Principal{}, ErrNoCredentials
}

// bearer checks a token against the node secret and every user token, in
// time that does not depend on which (if any) matches.
func (a *Authenticator) bearer(us *Users, token string) (Principal, error) {
	if token == "" {
		return Principal{}, ErrInvalidCredentials
	}
	h := sha256.Sum256([]byte(token))
	node := a.hasNode && subtle.ConstantTimeCompare(h[:], a.nodeSecret[:]) == 1
	var match *User
	for _, t := range us.tokens {
		if subtle.ConstantTimeCompare(h[:], t.hash[:]) == 1 {
			match = t.user
		}
	}
	switch {
	case node:
		return Principal{Name: NodeName, Role: RoleNode, Method: "node"}, nil
	case match != nil:
		return Principal{Name: match.Name, Role: match.Role, Method: "token"}, nil
	}
	return Principal{}, ErrInvalidCredentials
}

// basic checks a user's password. Results are cached briefly under a keyed
// hash of user and password, so a client that sends its password with
// every request pays the hash once a minute; checks that do run are
// bounded, so a flood of wrong passwords costs a few CPUs at most.
func (a *Authenticator) basic(ctx context.Context, us *Users, user, pw string) (Principal, error) {
	mac := hmac.New(sha256.New, a.cacheKey)
	mac.Write(binary.BigEndian.AppendUint32(nil, uint32(len(user))))
	mac.Write([]byte(user))
	mac.Write([]byte(pw))
	var key [sha256.Size]byte
	mac.Sum(key[:0])
	u, known := us.byName[user]
	now := time.Now()
	a.mu.Lock()
	c, hit := a.cache[key]
	a.mu.Unlock()
	if hit && now.Before(c.expires) && c.user == user {
		if c.ok && known {
			return Principal{Name: u.Name, Role: u.Role, Method: "basic"}, nil
		}
		return Principal{}, ErrInvalidCredentials
	}
	if a.waiters.Add(1) > int64(a.cfg.MaxHashWaiters+a.cfg.MaxHashChecks) {
		a.waiters.Add(-1)
		return Principal{}, ErrBusy
	}
	defer a.waiters.Add(-1)
	select {
	case a.slots <- struct{}{}:
	case <-ctx.Done():
		return Principal{}, ErrBusy
	}
	a.hashChecks.Add(1)
	ok := false
	if known && u.password != nil {
		ok = u.password.verify(pw)
	} else if us.dummy != nil {
		us.dummy.verify(pw) // unknown users take as long as known ones
	}
	<-a.slots
	a.remember(key, cached{user: user, ok: ok, expires: now.Add(a.cfg.CacheTTL)})
	if !ok {
		return Principal{}, ErrInvalidCredentials
	}
	return Principal{Name: u.Name, Role: u.Role, Method: "basic"}, nil
}

// remember caches a result, dropping expired results and then arbitrary
// ones to stay within CacheSize.
func (a *Authenticator) remember(key [sha256.Size]byte, c cached) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cache) >= a.cfg.CacheSize {
		now := time.Now()
		for k, v := range a.cache {
			if now.After(v.expires) {
				delete(a.cache, k)
			}
		}
		for k := range a.cache {
			if len(a.cache) < a.cfg.CacheSize {
				break
			}
			delete(a.cache, k)
		}
	}
	a.cache[key] = c
}

// verify checks pw against the hash in constant time.
func (h *passwordHash) verify(pw string) bool {
	if h.bcrypt != nil {
		return bcrypt.CompareHashAndPassword(h.bcrypt, []byte(pw)) == nil
	}
	p := h.argon
	k := argon2.IDKey([]byte(pw), p.salt, p.time, p.memory, p.threads, uint32(len(p.key)))
	return subtle.ConstantTimeCompare(k, p.key) == 1
}
