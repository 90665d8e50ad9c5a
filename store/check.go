package store

import "fmt"

// The checks of a request against the limits of this package, for
// backends to share: each error wraps ErrInvalid.

// CheckKey checks a key.
func CheckKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalid)
	}
	if len(key) > MaxKeySize {
		return fmt.Errorf("%w: key of %d bytes exceeds %d", ErrInvalid, len(key), MaxKeySize)
	}
	return nil
}

// CheckPut checks a key and the value to put there.
func CheckPut(key string, value []byte) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if len(value) > MaxValueSize {
		return fmt.Errorf("%w: value of %d bytes exceeds %d", ErrInvalid, len(value), MaxValueSize)
	}
	return nil
}

// CheckBatch checks the conditions and ops of a Batch.
func CheckBatch(conds []Cond, ops []Op) error {
	if len(conds) > MaxBatchOps || len(ops) > MaxBatchOps {
		return fmt.Errorf("%w: batch of %d conditions and %d ops exceeds %d", ErrInvalid, len(conds), len(ops), MaxBatchOps)
	}
	for i, c := range conds {
		if err := CheckKey(c.Key); err != nil {
			return fmt.Errorf("condition %d: %w", i, err)
		}
		if c.ModRevision < 0 {
			return fmt.Errorf("condition %d: %w: negative revision %d", i, ErrInvalid, c.ModRevision)
		}
	}
	for i, op := range ops {
		var err error
		switch op.Type {
		case OpPut:
			err = CheckPut(op.Key, op.Value)
		case OpDelete:
			err = CheckKey(op.Key)
		default:
			err = fmt.Errorf("%w: unknown op type %d", ErrInvalid, op.Type)
		}
		if err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
	}
	return nil
}

// CheckLoad checks a Loader.Load: the limits, and revisions with
// 1 <= CreateRevision <= ModRevision <= rev. Whether rev is below the
// store's current revision is the backend's to check.
func CheckLoad(rev int64, kvs []KV, deleted []string) error {
	if rev < 0 {
		return fmt.Errorf("%w: negative load revision %d", ErrInvalid, rev)
	}
	n := len(kvs) + len(deleted)
	if n > MaxBatchOps {
		return fmt.Errorf("%w: load of %d keys and %d deletions exceeds %d", ErrInvalid, len(kvs), len(deleted), MaxBatchOps)
	}
	size := 0
	for i, kv := range kvs {
		if err := CheckPut(kv.Key, kv.Value); err != nil {
			return fmt.Errorf("kv %d: %w", i, err)
		}
		if kv.CreateRevision < 1 || kv.CreateRevision > kv.ModRevision || kv.ModRevision > rev {
			return fmt.Errorf("kv %d (%q): %w: revisions create %d, mod %d at load revision %d",
				i, kv.Key, ErrInvalid, kv.CreateRevision, kv.ModRevision, rev)
		}
		size += len(kv.Key) + len(kv.Value)
	}
	for i, k := range deleted {
		if err := CheckKey(k); err != nil {
			return fmt.Errorf("deleted key %d: %w", i, err)
		}
		size += len(k)
	}
	if n > 1 && size > MaxLoadBytes {
		return fmt.Errorf("%w: load of %d bytes exceeds %d", ErrInvalid, size, MaxLoadBytes)
	}
	return nil
}
