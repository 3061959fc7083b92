// Hello-world HTTP/1.1 server with Go's net/http (it parses the request
// line, headers, Content-Length bodies and keep-alive).  Prints
// "listening on PORT" and serves until killed.  With an argument MS, it
// answers each request after MS milliseconds (the overlap benchmark's
// slow server).
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	delay := 0
	if len(os.Args) > 1 {
		delay, _ = strconv.Atoi(os.Args[1])
	}
	fmt.Printf("listening on %d\n", ln.Addr().(*net.TCPAddr).Port)
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if delay > 0 {
			time.Sleep(time.Duration(delay) * time.Millisecond)
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("Hello, world!"))
	})
	http.Serve(ln, nil)
}
