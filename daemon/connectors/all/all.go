// Package all registers kcd's built-in connectors: import it for its side
// effect.
//
//	import _ "github.com/kcd-project/kcd/daemon/connectors/all"
package all

import (
	// The FileStream source and sink connectors.
	_ "github.com/kcd-project/kcd/daemon/connectors/file"
	// The data generator.
	_ "github.com/kcd-project/kcd/daemon/connectors/datagen"
)
