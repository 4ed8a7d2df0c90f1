//! A hostile HTTP server for the client's bounds: on loopback, it answers
//! every request with one status line and headers, then its body as slowly
//! as it is told to, or not at all. Plain `std::net`, one thread per
//! connection; it runs until the test's process ends.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::Duration;

/// How the server sends its body.
#[derive(Debug, Clone)]
pub enum Body {
    /// `len` bytes (`Content-Length: len`), one byte every `every`.
    Trickle { len: usize, every: Duration },
    /// Headers saying `len` bytes, then nothing, the connection held open.
    Stall { len: usize },
    /// Headers only (`Location: to`, status 302), no body.
    Redirect { to: String },
}

/// Starts the server; its base URL, `http://127.0.0.1:PORT`.
pub fn serve(body: Body) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let body = body.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                    line.clear();
                }
                let mut out = stream;
                match body {
                    Body::Trickle { len, every } => {
                        let _ = write!(out, "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n");
                        for _ in 0..len {
                            if out.write_all(b"x").and_then(|()| out.flush()).is_err() {
                                return;
                            }
                            std::thread::sleep(every);
                        }
                    }
                    Body::Stall { len } => {
                        let _ = write!(out, "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n");
                        let _ = out.flush();
                        std::thread::sleep(Duration::from_secs(600));
                    }
                    Body::Redirect { to } => {
                        let _ = write!(out, "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\n\r\n");
                    }
                }
            });
        }
    });
    base
}
