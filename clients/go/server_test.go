package tally_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// servers started once for the package: `tally serve` on file: and on a redis-server of its own.
type server struct {
	name, url string
	cmds      []*exec.Cmd
}

var servers []*server

func jar() string {
	if j := os.Getenv("TALLY_JAR"); j != "" {
		return j
	}
	return filepath.Join("..", "..", "tally-server", "target", "tally.jar")
}

func startTally(name, store string) (*server, error) {
	cmd := exec.Command("java", "-jar", jar(), "serve", "--store", store, "--port", "0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = nil
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("java -jar %s: %w", jar(), err)
	}
	lines := bufio.NewScanner(out)
	found := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, "listening on ") {
				found <- strings.TrimPrefix(l, "listening on ")
			}
		}
	}()
	select {
	case url := <-found:
		return &server{name: name, url: strings.TrimRight(url, "/"), cmds: []*exec.Cmd{cmd}}, nil
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("tally serve --store %s did not print 'listening on' within 60 s (jar %s)", store, jar())
	}
}

func startRedis() (*exec.Cmd, string, error) {
	exe, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", fmt.Errorf("redis-server is not on the PATH: apt-get install -y redis-server")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(exe, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	for i := 0; i < 500; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return cmd, fmt.Sprintf("redis://127.0.0.1:%d", port), nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	return nil, "", fmt.Errorf("redis-server did not listen on %d", port)
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child())
	}
	code := func() int {
		dir, err := os.MkdirTemp("", "tally-go-")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		file, err := startTally("file", "file:"+dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		servers = append(servers, file)
		if os.Getenv("TALLY_GO_SKIP_REDIS") != "1" {
			redis, uri, err := startRedis()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			onRedis, err := startTally("redis", uri)
			if err != nil {
				_ = redis.Process.Kill()
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			onRedis.cmds = append(onRedis.cmds, redis)
			servers = append(servers, onRedis)
		}
		defer func() {
			for _, s := range servers {
				for _, c := range s.cmds {
					_ = c.Process.Kill()
					_ = c.Wait()
				}
			}
		}()
		os.Setenv("TALLY_URL", servers[0].url)
		return m.Run()
	}()
	os.Exit(code)
}
