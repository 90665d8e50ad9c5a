package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/tui/printer"
)

func newClusterCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show and change the kcd cluster: members, roles, Raft leadership",
	}
	cmd.AddCommand(newClusterStatusCmd(g), newClusterAddCmd(g), newClusterRemoveCmd(g), newClusterTransferCmd(g), newClusterJoinTokenCmd())
	return cmd
}

func newClusterStatusCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the cluster: leader, term, quorum and alarms, members, their Raft roles and reachability",
		Long: `Show the cluster: its leader and term, whether a quorum of voters is up,
the alarms raised, and every member with its Raft role and reachability.
Reachability is as the leader sees it (it talks to every member); a follower
asks the leader for it, and when the leader does not answer shows what it
cannot know itself as unknown.`,
		Example: `  # The cluster as the default server sees it
  kcctl cluster status

  # As JSON, from a given node
  kcctl --server http://10.0.0.2:8083 cluster status -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info, err := g.client().ClusterInfo(cmd.Context())
			if err != nil {
				return err
			}
			if output == "table" || output == "wide" {
				fmt.Fprint(cmd.OutOrStdout(), clusterSummary(info))
			}
			return printer.Print(cmd.OutOrStdout(), output, clusterPrintable(info))
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// clusterSummary is the lines above the members table: leader, quorum,
// alarms, and whose view the reachability is.
func clusterSummary(info api.ClusterInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s, leader %s, term %d, commit index %d\n", info.ClusterID, idOrNone(info.Leader), info.Term, info.CommitIndex)
	h := info.Health
	quorum := "ok"
	if !h.QuorumOK {
		quorum = "NOT OK"
	}
	fmt.Fprintf(&b, "quorum %s: %d of %d voters up, %d needed\n", quorum, h.VotersUp, h.Voters, h.Quorum)
	if len(h.Alarms) == 0 {
		fmt.Fprintln(&b, "alarms: none")
	} else {
		fmt.Fprintf(&b, "alarms: %s\n", strings.Join(h.Alarms, "; "))
	}
	if info.ReachabilityFrom != 0 && info.ReachabilityFrom != info.Leader {
		fmt.Fprintf(&b, "reachability as member %d sees it (the leader could not be asked)\n", info.ReachabilityFrom)
	}
	b.WriteString("\n")
	return b.String()
}

func idOrNone(id uint64) string {
	if id == 0 {
		return "<none>"
	}
	return strconv.FormatUint(id, 10)
}

func clusterPrintable(info api.ClusterInfo) printer.Printable {
	t := printer.Table{
		Header:     []string{"ID", "RAFT", "ROLES", "LEADER", "REACHABLE", "REST"},
		WideHeader: []string{"PEER", "LAST-CONTACT"},
	}
	var names []string
	for _, m := range info.Members {
		leader := ""
		if m.ID == info.Leader {
			leader = "*"
		}
		roles := strings.Join(m.Roles, "+")
		if roles == "" {
			roles = "<unknown>"
		}
		rest := m.RESTURL
		if rest == "" {
			rest = "<unknown>"
		}
		contact := "<none>"
		if m.LastContactMS != nil {
			contact = (time.Duration(*m.LastContactMS) * time.Millisecond).String()
		}
		reach := m.Reachability
		if reach == "" { // an older server
			reach = api.Unreachable
			if m.Reachable {
				reach = api.Reachable
			}
		}
		t.Rows = append(t.Rows, []string{strconv.FormatUint(m.ID, 10), m.Raft, roles, leader, reach, rest})
		t.WideRows = append(t.WideRows, []string{m.PeerURL, contact})
		names = append(names, "member/"+strconv.FormatUint(m.ID, 10))
	}
	return printer.Printable{Data: info, Table: t, Names: names}
}

func newClusterAddCmd(g *globals) *cobra.Command {
	var output, peerURL, restURL, roles, joinToken string
	cmd := &cobra.Command{
		Use:   "add ID --peer-url URL",
		Short: "Add a member to the cluster as a learner (it is promoted to voter once it has caught up)",
		Long: `Add a member to the cluster as a learner. Start the new node afterwards with
--join pointing at any member, or let it join by itself with --join (which
calls this for you). A member with the raft role is promoted to voter by the
leader once it has caught up with the log. It needs the cluster's join
token: --join-token, or KCCTL_JOIN_TOKEN.`,
		Example: `  # Make room for node 4, then start it
  KCCTL_JOIN_TOKEN=... kcctl cluster add 4 --peer-url http://10.0.0.4:8093 --rest-url http://10.0.0.4:8083`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			if joinToken == "" {
				joinToken = os.Getenv("KCCTL_JOIN_TOKEN")
			}
			m := api.NewMember{ID: id, PeerURL: peerURL, RESTURL: restURL, JoinToken: joinToken}
			if roles != "" {
				m.Roles = strings.Split(strings.ReplaceAll(roles, "+", ","), ",")
			}
			info, err := g.client().AddMember(cmd.Context(), m)
			if err != nil {
				return err
			}
			if output == "table" || output == "wide" {
				fmt.Fprintf(cmd.OutOrStdout(), "member/%d added as a learner\n", id)
				if output == "wide" { // the members now (wide.go)
					return printer.Print(cmd.OutOrStdout(), "wide", clusterPrintable(info))
				}
				return nil
			}
			if output == "name" {
				fmt.Fprintf(cmd.OutOrStdout(), "member/%d\n", id)
				return nil
			}
			return printer.Print(cmd.OutOrStdout(), output, clusterPrintable(info))
		},
	}
	cmd.Flags().StringVar(&peerURL, "peer-url", "", "Address the members reach the new node's Raft port at")
	cmd.Flags().StringVar(&restURL, "rest-url", "", "The new node's REST URL")
	cmd.Flags().StringVar(&roles, "roles", "raft+worker", "The new node's roles")
	cmd.Flags().StringVar(&joinToken, "join-token", "", "The cluster's join token (env KCCTL_JOIN_TOKEN; prefer the environment)")
	_ = cmd.MarkFlagRequired("peer-url")
	addOutputFlag(cmd, &output)
	return cmd
}

func newClusterRemoveCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "remove ID",
		Short:   "Remove a member from the cluster for good (its id is never reused)",
		Example: `  kcctl cluster remove 3`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			if err := g.client().RemoveMember(cmd.Context(), id); err != nil {
				return err
			}
			return printChange(cmd, output, fmt.Sprintf("member/%d", id), "removed", map[string]any{"removed": id}, membersAfter(g.client()))
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

func newClusterTransferCmd(g *globals) *cobra.Command {
	var output string
	var to uint64
	cmd := &cobra.Command{
		Use:   "transfer-leader",
		Short: "Hand Raft leadership to another voter (before maintenance of the leader's machine)",
		Example: `  # To the most up-to-date other voter
  kcctl cluster transfer-leader

  # To node 2
  kcctl cluster transfer-leader --to 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			lead, err := g.client().TransferLeader(ctx, to)
			if err != nil {
				return err
			}
			return printChange(cmd, output, fmt.Sprintf("member/%d", lead), "is now the leader", map[string]any{"leader": lead}, membersAfter(g.client()))
		},
	}
	cmd.Flags().Uint64Var(&to, "to", 0, "Id of the voter to hand leadership to (default: the most up-to-date one)")
	addOutputFlag(cmd, &output)
	return cmd
}

func parseID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, &usageError{fmt.Errorf("member id %q is not a positive integer", s)}
	}
	return id, nil
}

// printResult prints the outcome of a change, kubectl style: "member/3
// removed" for people, the name alone with -o name, data for json and yaml.
func printResult(cmd *cobra.Command, output, name, verb string, data any) error {
	switch output {
	case "table", "wide":
		_, err := fmt.Fprintln(cmd.OutOrStdout(), name, verb)
		return err
	}
	return printer.Print(cmd.OutOrStdout(), output, printer.Printable{Data: data, Names: []string{name}})
}

// joinTokenFile is where a kcd member keeps the join token it generated, in
// its data dir (daemon.JoinTokenFile).
const joinTokenFile = "join-token"

func newClusterJoinTokenCmd() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "join-token --data-dir DIR",
		Short: "Print the join token a member generated (read from its data dir, on its machine)",
		Long: `Print the cluster's join token as the member that generated it keeps it in
its data dir. A cluster whose members were given no --join-token gets one
generated by its leader; this prints it, on that member's machine, to whoever
may read the data dir. The token is never served over the network.`,
		Example: `  KCD_JOIN_TOKEN=$(kcctl cluster join-token --data-dir /var/lib/kcd) kcd --join http://10.0.0.1:8083 ...`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := os.ReadFile(filepath.Join(dataDir, joinTokenFile))
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%s holds no generated join token: the cluster's token was given with --join-token (KCD_JOIN_TOKEN, --join-token-file), or another member generated it (its log says so)", dataDir)
			}
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), strings.TrimSpace(string(b)))
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "The member's data dir")
	_ = cmd.MarkFlagRequired("data-dir")
	return cmd
}
