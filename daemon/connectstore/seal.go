package connectstore

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kcd-project/kcd/store"
)

// Encryption at rest of connector and task configs: a sealed store
// (Seal) encrypts the value of every connect/config/<name> and
// connect/tasks/<name> key it writes (and of the connectors an import
// stages), one envelope per value, with
// AES-256-GCM and the store key as additional data (an envelope cannot be
// moved to another key); the store keys stay readable. It decrypts what it
// reads; values written in plain text before (or without) a key stay
// readable and are encrypted at their next write.
//
//	kcdenc1:<key id>:<base64 of nonce and ciphertext>
//
// The key id is derived from the key, so that a keyring with a new key
// first and the old one second encrypts with the new one and still reads
// what the old one encrypted (rotation).

// envelopePrefix starts every encrypted value; JSON never starts so.
const envelopePrefix = "kcdenc1:"

// ErrNoKey says a value is encrypted with a key this node lacks.
var ErrNoKey = errors.New("connectstore: encrypted with a key this node does not have")

// MaxKeyFile bounds a key file.
const MaxKeyFile = 64 << 10

// Keyring holds the keys of encryption at rest; the first encrypts.
type Keyring struct {
	keys []sealKey
}

type sealKey struct {
	id   string
	aead cipher.AEAD
}

// LoadKeyring reads a key file (ParseKeyring).
func LoadKeyring(path string) (*Keyring, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config encryption key file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("config encryption key file: %w", err)
	}
	if len(b) > MaxKeyFile {
		return nil, fmt.Errorf("config encryption key file %s is larger than %d bytes", path, MaxKeyFile)
	}
	k, err := ParseKeyring(b)
	if err != nil {
		return nil, fmt.Errorf("config encryption key file %s: %w", path, err)
	}
	return k, nil
}

// ParseKeyring reads one key per line, 32 bytes in hex (64 digits) or
// base64; blank lines and lines starting with # are skipped. The first key
// encrypts; every key decrypts. Errors never show a key.
func ParseKeyring(text []byte) (*Keyring, error) {
	k := &Keyring{}
	for i, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		raw, err := hex.DecodeString(line)
		if err != nil || len(raw) != 32 {
			raw, err = base64.StdEncoding.DecodeString(line)
			if err != nil {
				raw, err = base64.RawStdEncoding.DecodeString(line)
			}
		}
		if err != nil || len(raw) != 32 {
			return nil, fmt.Errorf("line %d: a key is 32 bytes in hex (64 digits) or base64 (e.g. openssl rand -hex 32)", i+1)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		sum := sha256.Sum256(append([]byte("kcd config encryption key id\x00"), raw...))
		id := hex.EncodeToString(sum[:4])
		for _, o := range k.keys {
			if o.id == id {
				return nil, fmt.Errorf("line %d: the same key twice", i+1)
			}
		}
		k.keys = append(k.keys, sealKey{id: id, aead: aead})
	}
	if len(k.keys) == 0 {
		return nil, errors.New("no key")
	}
	return k, nil
}

// IDs are the key ids, the encrypting one first; they say nothing of the keys.
func (k *Keyring) IDs() []string {
	if k == nil {
		return nil
	}
	out := make([]string, len(k.keys))
	for i, sk := range k.keys {
		out[i] = sk.id
	}
	return out
}

// Sealed tells whether a value is an envelope.
func Sealed(value []byte) bool { return bytes.HasPrefix(value, []byte(envelopePrefix)) }

// importStaging is where an import stages its connectors (daemon/importer):
// kcd/imports/data/<id>/c/<name> holds a connector's config and task configs.
const importStaging = "kcd/imports/data/"

// sealedKey tells whether key's value is encrypted at rest.
func sealedKey(key string) bool {
	if strings.HasPrefix(key, Prefix+"config/") || strings.HasPrefix(key, Prefix+"tasks/") {
		return true
	}
	rest, ok := strings.CutPrefix(key, importStaging)
	if !ok {
		return false
	}
	_, rest, _ = strings.Cut(rest, "/")
	return strings.HasPrefix(rest, "c/")
}

func (k *Keyring) seal(key string, plain []byte) ([]byte, error) {
	sk := k.keys[0]
	nonce := make([]byte, sk.aead.NonceSize(), sk.aead.NonceSize()+len(plain)+sk.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("connectstore: encrypt %s: %w", key, err)
	}
	ct := sk.aead.Seal(nonce, nonce, plain, []byte(key))
	out := make([]byte, 0, len(envelopePrefix)+len(sk.id)+1+base64.StdEncoding.EncodedLen(len(ct)))
	out = append(out, envelopePrefix...)
	out = append(out, sk.id...)
	out = append(out, ':')
	return base64.StdEncoding.AppendEncode(out, ct), nil
}

// open decrypts an envelope; a plain value is returned as it is.
func (k *Keyring) open(key string, value []byte) ([]byte, error) {
	if !Sealed(value) {
		return value, nil
	}
	id, b64, ok := strings.Cut(string(value[len(envelopePrefix):]), ":")
	if !ok {
		return nil, fmt.Errorf("connectstore: %s holds a malformed encrypted value", key)
	}
	var sk *sealKey
	if k != nil {
		for i := range k.keys {
			if k.keys[i].id == id {
				sk = &k.keys[i]
			}
		}
	}
	if sk == nil {
		return nil, fmt.Errorf("%w: %s is encrypted with key id %s; give the node that key with --config-encryption-key-file", ErrNoKey, key, id)
	}
	ct, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(ct) < sk.aead.NonceSize() {
		return nil, fmt.Errorf("connectstore: %s holds a malformed encrypted value", key)
	}
	plain, err := sk.aead.Open(nil, ct[:sk.aead.NonceSize()], ct[sk.aead.NonceSize():], []byte(key))
	if err != nil {
		return nil, fmt.Errorf("connectstore: %s does not decrypt with key id %s (altered, or moved from another key)", key, id)
	}
	return plain, nil
}

// Seal returns s with connector and task configs encrypted at rest with
// k's first key (nil k: written in plain text). Whatever k is, encrypted
// values read through it are decrypted, or fail with ErrNoKey when k lacks
// their key. Watch events carry values as stored.
func Seal(s store.Store, k *Keyring) store.Store {
	return &sealedStore{Store: s, keys: k}
}

type sealedStore struct {
	store.Store
	keys *Keyring
}

func (s *sealedStore) sealValue(key string, v []byte) ([]byte, error) {
	if s.keys == nil || !sealedKey(key) || Sealed(v) {
		return v, nil
	}
	return s.keys.seal(key, v)
}

func (s *sealedStore) openKV(kv store.KV) (store.KV, error) {
	if !sealedKey(kv.Key) || !Sealed(kv.Value) {
		return kv, nil
	}
	v, err := s.keys.open(kv.Key, kv.Value)
	if err != nil {
		return kv, err
	}
	kv.Value = v
	return kv, nil
}

func (s *sealedStore) Get(ctx context.Context, key string) (store.KV, bool, error) {
	kv, found, err := s.Store.Get(ctx, key)
	if err != nil || !found {
		return kv, found, err
	}
	kv, err = s.openKV(kv)
	if err != nil {
		return store.KV{}, false, err
	}
	return kv, true, nil
}

func (s *sealedStore) Put(ctx context.Context, key string, value []byte) (int64, error) {
	v, err := s.sealValue(key, value)
	if err != nil {
		return 0, err
	}
	return s.Store.Put(ctx, key, v)
}

func (s *sealedStore) CompareAndSet(ctx context.Context, key string, expectModRev int64, value []byte) (int64, bool, error) {
	v, err := s.sealValue(key, value)
	if err != nil {
		return 0, false, err
	}
	return s.Store.CompareAndSet(ctx, key, expectModRev, v)
}

func (s *sealedStore) Scan(ctx context.Context, prefix string, limit int) ([]store.KV, int64, error) {
	kvs, rev, err := s.Store.Scan(ctx, prefix, limit)
	if err != nil {
		return nil, 0, err
	}
	for i, kv := range kvs {
		if kvs[i], err = s.openKV(kv); err != nil {
			return nil, 0, err
		}
	}
	return kvs, rev, nil
}

func (s *sealedStore) Batch(ctx context.Context, conds []store.Cond, ops []store.Op) (int64, bool, error) {
	var sealed []store.Op
	for i, op := range ops {
		if op.Type != store.OpPut || s.keys == nil || !sealedKey(op.Key) {
			continue
		}
		if sealed == nil {
			sealed = append([]store.Op(nil), ops...)
		}
		v, err := s.sealValue(op.Key, op.Value)
		if err != nil {
			return 0, false, err
		}
		sealed[i].Value = v
	}
	if sealed != nil {
		ops = sealed
	}
	return s.Store.Batch(ctx, conds, ops)
}
