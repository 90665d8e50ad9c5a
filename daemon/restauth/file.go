// Package restauth authenticates the callers of kcd's REST API and names
// the roles they have: users from a credentials file (HTTP basic with
// bcrypt or argon2id password hashes, bearer tokens kept as SHA-256
// hashes, client certificates mapped by subject CN under mutual TLS), and
// the node identity that kcd nodes prove with the cluster's node secret.
//
// The credentials file (--rest-auth-file) is YAML:
//
//	users:
//	  - name: alice
//	    role: admin
//	    password: $2b$12$...            # kcctl auth hash-password
//	  - name: ci
//	    role: operate
//	    tokens: [sha256:9f86d0...]       # kcctl auth new-token
//	  - name: dashboards
//	    role: read
//	    certificate: dashboards.example.com   # subject CN of a client certificate
//
// No file ever holds a password or token in clear: a password that is not
// a hash is refused, and so is a token that is not a SHA-256 hash.
package restauth

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
)

// Role is what a principal may do; each role allows what the ones below
// it allow. RoleNode is the kcd nodes' own identity: no user has it.
type Role int

const (
	// RoleNone is no principal: only the open endpoints (GET /, /health).
	RoleNone Role = iota
	// RoleRead may call every GET except the raw store keys.
	RoleRead
	// RoleOperate may also write connectors: create, config, delete,
	// pause, resume, stop, restart, offsets, validate.
	RoleOperate
	// RoleAdmin may call everything a user may: cluster, workers, store
	// keys and switch, imports.
	RoleAdmin
	// RoleNode is a kcd node: it may call everything, the endpoints only
	// nodes call (worker heartbeats, the peer store protocol) included.
	RoleNode
)

// String is the role's name as the credentials file spells it.
func (r Role) String() string {
	switch r {
	case RoleNone:
		return "none"
	case RoleRead:
		return "read"
	case RoleOperate:
		return "operate"
	case RoleAdmin:
		return "admin"
	case RoleNode:
		return "node"
	}
	return "role(" + strconv.Itoa(int(r)) + ")"
}

// Allows tells whether a principal of role r may call an endpoint that
// needs role need. Only nodes reach the node endpoints; users reach those
// of their role and below.
func (r Role) Allows(need Role) bool {
	if r == RoleNode {
		return true
	}
	if need == RoleNode {
		return false
	}
	return r >= need
}

// userRoles are the roles a user of the credentials file may have.
var userRoles = map[string]Role{"read": RoleRead, "operate": RoleOperate, "admin": RoleAdmin}

// MaxFileSize bounds the credentials file.
const MaxFileSize = 1 << 20

// Bounds of the hash parameters the file may ask for: a hash whose check
// would take seconds or gigabytes is refused at load, not paid per request.
const (
	maxBcryptCost    = 15
	maxArgon2Memory  = 64 << 10 // KiB: 64 MiB, each check allocates it
	maxArgon2Time    = 10
	maxArgon2Threads = 16
)

// User is one user of the credentials file.
type User struct {
	Name string
	Role Role
	// password is the parsed hash ("" none).
	password *passwordHash
	// tokens are SHA-256 hashes of the user's bearer tokens.
	tokens [][sha256.Size]byte
	// certificate is the subject CN of the user's client certificates.
	certificate string
}

// Users are the users of one version of the credentials file.
type Users struct {
	byName map[string]*User
	byCert map[string]*User
	tokens []tokenEntry
	// dummy is a user's password hash, checked for unknown users.
	dummy *passwordHash
	// digest tells versions of the file apart without keeping its bytes.
	digest [sha256.Size]byte
}

type tokenEntry struct {
	hash [sha256.Size]byte
	user *User
}

// Len is the number of users.
func (u *Users) Len() int { return len(u.byName) }

// Lookup returns the user named name.
func (u *Users) Lookup(name string) (*User, bool) {
	usr, ok := u.byName[name]
	return usr, ok
}

// Parse reads a credentials file. Its errors name the line and the user,
// never a password, hash or token.
func Parse(data []byte) (*Users, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("credentials file is larger than %d bytes", MaxFileSize)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("credentials file is not valid YAML: %w", err)
	}
	us := &Users{byName: map[string]*User{}, byCert: map[string]*User{}, digest: sha256.Sum256(data)}
	if len(doc.Content) == 0 {
		return nil, errors.New("credentials file is empty: it needs a users list")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: the credentials file must be a mapping with a users list", root.Line)
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "users" {
			return nil, fmt.Errorf("line %d: unknown key %q (the file has only users)", k.Line, k.Value)
		}
		list = v
	}
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: users must be a list", root.Line)
	}
	seenTokens := map[[sha256.Size]byte]string{}
	for _, n := range list.Content {
		usr, err := parseUser(n)
		if err != nil {
			return nil, err
		}
		if _, dup := us.byName[usr.Name]; dup {
			return nil, fmt.Errorf("line %d: user %q is defined twice", n.Line, usr.Name)
		}
		us.byName[usr.Name] = usr
		if us.dummy == nil {
			us.dummy = usr.password
		}
		if usr.certificate != "" {
			if other, dup := us.byCert[usr.certificate]; dup {
				return nil, fmt.Errorf("line %d: user %q: certificate CN %q is already user %q's", n.Line, usr.Name, usr.certificate, other.Name)
			}
			us.byCert[usr.certificate] = usr
		}
		for _, h := range usr.tokens {
			if other, dup := seenTokens[h]; dup {
				return nil, fmt.Errorf("line %d: user %q: a token hash is listed twice (also under user %q)", n.Line, usr.Name, other)
			}
			seenTokens[h] = usr.Name
			us.tokens = append(us.tokens, tokenEntry{hash: h, user: usr})
		}
	}
	return us, nil
}

func parseUser(n *yaml.Node) (*User, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: a user must be a mapping (name, role, password, tokens, certificate)", n.Line)
	}
	usr := &User{}
	fields := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "name", "role", "password", "tokens", "certificate":
		default:
			return nil, fmt.Errorf("line %d: unknown key %q (a user has name, role, password, tokens, certificate)", k.Line, k.Value)
		}
		if _, dup := fields[k.Value]; dup {
			return nil, fmt.Errorf("line %d: key %q is given twice", k.Line, k.Value)
		}
		fields[k.Value] = v
	}
	scalar := func(key string) (string, *yaml.Node, error) {
		v, ok := fields[key]
		if !ok {
			return "", nil, nil
		}
		if v.Kind != yaml.ScalarNode {
			return "", v, fmt.Errorf("line %d: %s must be a string", v.Line, key)
		}
		return v.Value, v, nil
	}
	name, nn, err := scalar("name")
	if err != nil {
		return nil, err
	}
	if name = strings.TrimSpace(name); name == "" {
		return nil, fmt.Errorf("line %d: a user needs a name", n.Line)
	}
	if strings.ContainsAny(name, ":\n\r") {
		return nil, fmt.Errorf("line %d: user name %q contains ':' or a line break (HTTP basic cannot carry it)", nn.Line, name)
	}
	usr.Name = name
	role, rn, err := scalar("role")
	if err != nil {
		return nil, err
	}
	if rn == nil {
		return nil, fmt.Errorf("line %d: user %q needs a role (read, operate or admin)", n.Line, name)
	}
	r, ok := userRoles[role]
	if !ok {
		return nil, fmt.Errorf("line %d: user %q: unknown role %q (read, operate or admin)", rn.Line, name, role)
	}
	usr.Role = r
	pw, pn, err := scalar("password")
	if err != nil {
		return nil, err
	}
	if pn != nil {
		h, err := parsePasswordHash(pw)
		if err != nil {
			return nil, fmt.Errorf("line %d: user %q: %w", pn.Line, name, err)
		}
		usr.password = h
	}
	if tn, ok := fields["tokens"]; ok {
		if tn.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("line %d: user %q: tokens must be a list of sha256:<hex> hashes", tn.Line, name)
		}
		for _, t := range tn.Content {
			h, err := parseTokenHash(t)
			if err != nil {
				return nil, fmt.Errorf("line %d: user %q: %w", t.Line, name, err)
			}
			usr.tokens = append(usr.tokens, h)
		}
	}
	cn, _, err := scalar("certificate")
	if err != nil {
		return nil, err
	}
	usr.certificate = strings.TrimSpace(cn)
	if usr.password == nil && len(usr.tokens) == 0 && usr.certificate == "" {
		return nil, fmt.Errorf("line %d: user %q has no password, tokens or certificate: it could never log in", n.Line, name)
	}
	return usr, nil
}

// TokenPrefix starts a token hash in the credentials file.
const TokenPrefix = "sha256:"

func parseTokenHash(n *yaml.Node) ([sha256.Size]byte, error) {
	var h [sha256.Size]byte
	if n.Kind != yaml.ScalarNode || !strings.HasPrefix(n.Value, TokenPrefix) {
		return h, errors.New("a token must be given as its hash, sha256:<64 hex digits> (kcctl auth new-token prints one); tokens in clear are refused")
	}
	b, err := hex.DecodeString(strings.TrimPrefix(n.Value, TokenPrefix))
	if err != nil || len(b) != sha256.Size {
		return h, errors.New("a token hash must be sha256: followed by 64 hex digits")
	}
	copy(h[:], b)
	return h, nil
}

// TokenHash is the line of the credentials file for a bearer token.
func TokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return TokenPrefix + hex.EncodeToString(h[:])
}

// passwordHash is a parsed bcrypt or argon2id hash.
type passwordHash struct {
	bcrypt []byte // the whole bcrypt hash, or nil
	argon  *argon2Params
}

type argon2Params struct {
	memory  uint32
	time    uint32
	threads uint8
	salt    []byte
	key     []byte
}

func parsePasswordHash(s string) (*passwordHash, error) {
	switch {
	case strings.HasPrefix(s, "$2a$"), strings.HasPrefix(s, "$2b$"), strings.HasPrefix(s, "$2y$"):
		cost, err := bcrypt.Cost([]byte(s))
		if err != nil {
			return nil, errors.New("password is not a valid bcrypt hash")
		}
		if cost > maxBcryptCost {
			return nil, fmt.Errorf("password's bcrypt cost %d is above %d: every login would take seconds", cost, maxBcryptCost)
		}
		return &passwordHash{bcrypt: []byte(s)}, nil
	case strings.HasPrefix(s, "$argon2id$"):
		p, err := parseArgon2(s)
		if err != nil {
			return nil, err
		}
		return &passwordHash{argon: p}, nil
	case strings.HasPrefix(s, "$argon2"):
		return nil, errors.New("password uses an argon2 variant other than argon2id")
	}
	return nil, errors.New("password is not a bcrypt ($2a$, $2b$, $2y$) or argon2id ($argon2id$) hash; passwords in clear are refused (kcctl auth hash-password makes a hash)")
}

// parseArgon2 reads the PHC string $argon2id$v=19$m=M,t=T,p=P$salt$hash.
func parseArgon2(s string) (*argon2Params, error) {
	bad := errors.New("password is not a valid argon2id hash ($argon2id$v=19$m=..,t=..,p=..$salt$hash)")
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[2] != "v=19" {
		return nil, bad
	}
	p := &argon2Params{}
	for _, kv := range strings.Split(parts[3], ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, bad
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil || n == 0 {
			return nil, bad
		}
		switch k {
		case "m":
			p.memory = uint32(n)
		case "t":
			p.time = uint32(n)
		case "p":
			if n > 255 {
				return nil, bad
			}
			p.threads = uint8(n)
		default:
			return nil, bad
		}
	}
	if p.memory == 0 || p.time == 0 || p.threads == 0 {
		return nil, bad
	}
	if p.memory > maxArgon2Memory || p.time > maxArgon2Time || p.threads > maxArgon2Threads {
		return nil, fmt.Errorf("password's argon2id parameters exceed m=%d,t=%d,p=%d: every login would cost too much", maxArgon2Memory, maxArgon2Time, maxArgon2Threads)
	}
	var err error
	if p.salt, err = base64.RawStdEncoding.DecodeString(parts[4]); err != nil || len(p.salt) < 8 {
		return nil, bad
	}
	if p.key, err = base64.RawStdEncoding.DecodeString(parts[5]); err != nil || len(p.key) < 16 || len(p.key) > 128 {
		return nil, bad
	}
	return p, nil
}

// equalHash tells whether two password hashes are the same string; it is
// how a cached verification knows its user's password is unchanged.
func (h *passwordHash) equal(o *passwordHash) bool {
	switch {
	case h == nil || o == nil:
		return h == o
	case h.bcrypt != nil:
		return bytes.Equal(h.bcrypt, o.bcrypt)
	case h.argon != nil && o.argon != nil:
		return bytes.Equal(h.argon.key, o.argon.key) && bytes.Equal(h.argon.salt, o.argon.salt)
	}
	return false
}
