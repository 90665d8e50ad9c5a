package daemon

import (
	"context"
	"fmt"

	"github.com/kcd-project/kcd/daemon/restapi"
	"github.com/kcd-project/kcd/daemon/restauth"
)

// startRESTAuth reads the node secret and the REST API's credentials file
// and keeps the file reloaded until ctx ends. It returns nil when the API
// is open (no rest-auth-file), and warns when it is open beyond loopback.
func (n *Node) startRESTAuth(ctx context.Context) (*restauth.Authenticator, error) {
	if n.cfg.NodeTokenFile != "" {
		s, err := restauth.ReadNodeSecret(n.cfg.NodeTokenFile)
		if err != nil {
			return nil, err
		}
		n.nodeSecret = s
	}
	if n.cfg.RESTAuthFile == "" {
		if !restapi.HostPolicyFor("", n.cfg.RESTAddr).Loopback {
			n.log.Warn("SECURITY: the REST API is open to anyone who can reach "+n.cfg.RESTAddr+": anyone can create connectors, read and write the store and remove members. Set --rest-auth-file (users and roles) and --node-token-file (the nodes' shared secret) on every node, or bind --rest-addr to 127.0.0.1",
				"rest_addr", n.cfg.RESTAddr)
		}
		return nil, nil
	}
	auth, err := restauth.New(restauth.Config{File: n.cfg.RESTAuthFile, NodeSecret: n.nodeSecret, Logger: n.log.With("subsys", "restauth")})
	if err != nil {
		return nil, fmt.Errorf("rest-auth-file: %w", err)
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		auth.Run(ctx)
	}()
	n.log.Info("REST API authenticates its callers", "rest_auth_file", n.cfg.RESTAuthFile, "users", auth.Users().Len())
	return auth, nil
}
