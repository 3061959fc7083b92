// The threads article's fetcher in Go: W goroutines share R GETs of URL,
// each on a new connection; prints "elapsed SECONDS".  Also, with "sub",
// W goroutines each run one `sleep 0.1` subprocess.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

func main() {
	w, _ := strconv.Atoi(os.Args[2])
	start := time.Now()
	var wg sync.WaitGroup
	if os.Args[1] == "sub" {
		for i := 0; i < w; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); exec.Command("sleep", "0.1").Run() }()
		}
	} else {
		r, _ := strconv.Atoi(os.Args[3])
		url := os.Args[4]
		jobs := make(chan int, r)
		for i := 0; i < r; i++ {
			jobs <- i
		}
		close(jobs)
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		for i := 0; i < w; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range jobs {
					resp, err := client.Get(url)
					if err != nil {
						fmt.Fprintln(os.Stderr, err)
						os.Exit(1)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
		}
	}
	wg.Wait()
	fmt.Printf("elapsed %.3f\n", time.Since(start).Seconds())
}
