package connectstore

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzSeal: what a keyring seals under a store key opens under that key
// to what was sealed, under no other key; an altered envelope either does
// not open or opens to what was sealed; a value that is not an envelope
// reads as it is.
func FuzzSeal(f *testing.F) {
	f.Add("connect/config/a", "connect/config/b", []byte(`{"config":{"password":"x"}}`), uint16(20), byte(1))
	f.Add("connect/tasks/a", "connect/tasks/a", []byte{}, uint16(0), byte(0x80))
	f.Add("kcd/imports/data/x/c/a", "", []byte("kcdenc1:"), uint16(9), byte('='))
	k, err := ParseKeyring([]byte(strings.Repeat("ab", 32) + "\n" + strings.Repeat("cd", 32)))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key, other string, plain []byte, at uint16, flip byte) {
		env, err := k.seal(key, plain)
		if err != nil {
			t.Fatal(err)
		}
		if !Sealed(env) {
			t.Fatalf("seal of %q is not an envelope: %q", plain, env)
		}
		if got, err := k.open(key, env); err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("%q sealed under %q opens to %q, %v", plain, key, got, err)
		}
		if other != key {
			if got, err := k.open(other, env); err == nil {
				t.Fatalf("%q sealed under %q opens under %q, to %q", plain, key, other, got)
			}
		}
		altered := bytes.Clone(env)
		altered[int(at)%len(altered)] ^= flip
		if got, err := k.open(key, altered); err == nil && Sealed(altered) && !bytes.Equal(got, plain) {
			t.Fatalf("altered envelope %q opens to %q, not %q", altered, got, plain)
		}
		if !Sealed(plain) {
			if got, err := k.open(key, plain); err != nil || !bytes.Equal(got, plain) {
				t.Fatalf("plain %q reads as %q, %v", plain, got, err)
			}
		}
	})
}

// FuzzParseKeyring reads any key file: no panic, and no error shows a line
// of it (a line may be a key).
func FuzzParseKeyring(f *testing.F) {
	f.Add("# keys\n" + strings.Repeat("ab", 32) + "\n\n" + strings.Repeat("cd", 32) + "\n")
	f.Add(strings.Repeat("ab", 31) + "\nq83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=\n")
	f.Add(strings.Repeat("ab", 32) + "\n" + strings.Repeat("ab", 32))
	f.Fuzz(func(t *testing.T, text string) {
		_, err := ParseKeyring([]byte(text))
		if err == nil {
			return
		}
		for _, l := range strings.Split(text, "\n") {
			if l = strings.TrimSpace(l); len(l) >= 16 && strings.Contains(err.Error(), l) {
				t.Fatalf("error shows line %q: %v", l, err)
			}
		}
	})
}
