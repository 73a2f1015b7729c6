// compose-check loads a Compose file with compose-go, the loader Docker Compose itself
// uses (interpolation, validation against the Compose specification, normalisation), and
// prints the resulting project as JSON; any error is printed on one line, exit 1.
// Built and cached by scripts/ensure-cluster.mjs; run by test/cluster/compose.test.ts.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: compose-check docker-compose.yml")
		os.Exit(2)
	}
	file, err := filepath.Abs(os.Args[1])
	if err == nil {
		err = run(file)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "compose-check: "+strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(1)
	}
}

func run(file string) error {
	opts, err := cli.NewProjectOptions([]string{file},
		cli.WithWorkingDirectory(filepath.Dir(file)),
		cli.WithName("turnstile"),
		cli.WithInterpolation(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		return err
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(project, "", "  ")
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(append(out, '\n'))
	return err
}
