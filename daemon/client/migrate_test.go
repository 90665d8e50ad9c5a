package client

import "github.com/kcd-project/kcd/migrate"

// kcctl migrate hands the client to the migrate package.
var (
	_ migrate.Importer = (*Client)(nil)
	_ migrate.Exporter = (*Client)(nil)
)
