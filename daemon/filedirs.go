package daemon

import (
	"os"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/restapi"
)

// fileConfinement returns the node's confinement of the file connectors
// (--file-connector-dirs; nil: none), which its herder validates against
// and its worker enforces. Without one, and with a REST API that other
// hosts can reach, anyone who can create a connector can read and write
// any file of the process: it says so, loudly.
func (n *Node) fileConfinement() (*connect.Files, error) {
	files, err := connect.NewFiles(n.cfg.FileConnectorDirs)
	if err != nil {
		return nil, err
	}
	if files == nil && !restapi.HostPolicyFor("", n.cfg.RESTAddr).Loopback {
		n.log.Warn("FILE CONNECTORS ARE NOT CONFINED: a FileStreamSource or FileStreamSink created through the REST API, which is not on loopback, "+
			"can read or write any file this process can; set --file-connector-dirs (KCD_FILE_CONNECTOR_DIRS) to the directories they may use, "+
			"the same on every node", "rest_addr", n.cfg.RESTAddr)
	}
	for _, d := range files.Dirs() {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			n.log.Warn("a file connector directory is not a directory on this node (yet); file connectors cannot use it", "dir", d, "err", err)
		}
	}
	return files, nil
}
