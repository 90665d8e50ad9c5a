package main

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"
	"golang.org/x/crypto/bcrypt"
)

func newAuthCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Make password hashes and tokens for kcd's rest-auth-file",
		// Nothing here talks to a server: no context is needed.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
	}
	cmd.AddCommand(newHashPasswordCmd(), newNewTokenCmd())
	return cmd
}

func newHashPasswordCmd() *cobra.Command {
	var cost int
	cmd := &cobra.Command{
		Use:   "hash-password",
		Short: "Read a password on stdin and print its bcrypt hash for the rest-auth-file",
		Long: `hash-password reads a password from stdin (without echo, and twice, on a
terminal; else its first line) and prints the line to put under the user
in kcd's rest-auth-file:

  password: "$2a$12$..."`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cost < bcrypt.MinCost || cost > 15 {
				return &usageError{fmt.Errorf("--cost %d is outside %d..15", cost, bcrypt.MinCost)}
			}
			pw, err := readPassword(cmd.InOrStdin(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			h, err := bcrypt.GenerateFromPassword([]byte(pw), cost)
			if err != nil {
				return fmt.Errorf("hash the password: %w", err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "password: %q\n", h)
			return err
		},
	}
	cmd.Flags().IntVar(&cost, "cost", 12, "bcrypt cost (each step doubles the work of every check)")
	return cmd
}

// readPassword reads a password from in: from a terminal without echo,
// twice; else the first line.
func readPassword(in io.Reader, prompt io.Writer) (string, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(f.Fd()) {
		fmt.Fprint(prompt, "Password: ")
		a, err := term.ReadPassword(f.Fd())
		fmt.Fprintln(prompt)
		if err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		fmt.Fprint(prompt, "Again: ")
		b, err := term.ReadPassword(f.Fd())
		fmt.Fprintln(prompt)
		if err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		if string(a) != string(b) {
			return "", errors.New("the passwords differ")
		}
		if len(a) == 0 {
			return "", errors.New("empty password")
		}
		return string(a), nil
	}
	line, err := bufio.NewReader(io.LimitReader(in, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty password on stdin")
	}
	if len(line) > 72 {
		return "", errors.New("the password is longer than 72 bytes, bcrypt's limit")
	}
	return line, nil
}

func newNewTokenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "new-token",
		Short: "Print a new random bearer token and its hash for the rest-auth-file",
		Long: `new-token prints a random token (first line: give it to the client, e.g. as
KCCTL_TOKEN or kcctl --token; nothing keeps it) and its hash (second line:
put it under the user's tokens in kcd's rest-auth-file).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := make([]byte, 32)
			if _, err := rand.Read(b); err != nil {
				return err
			}
			tok := "kcd_" + hex.EncodeToString(b)
			h := sha256.Sum256([]byte(tok))
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s\nsha256:%s\n", tok, hex.EncodeToString(h[:]))
			return err
		},
	}
}
