//! A scripted owner on the other end of an in-memory duplex.

use serde_json::{Value, json};
use session_client::{Client, ClientError, ClientOptions};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

/// The owner's side of one connection.
pub(crate) struct Fake {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    w: WriteHalf<DuplexStream>,
}

impl Fake {
    /// The next request line, as JSON (`None` once the client closed its side).
    pub(crate) async fn next(&mut self) -> Option<Value> {
        let line = self.lines.next_line().await.expect("read")?;
        Some(serde_json::from_str(&line).expect("the client writes JSON"))
    }

    /// Writes one line.
    pub(crate) async fn send(&mut self, line: &str) {
        self.w.write_all(line.as_bytes()).await.expect("write");
        self.w.write_all(b"\n").await.expect("write");
        self.w.flush().await.expect("flush");
    }

    /// Answers request `id` with `result`.
    pub(crate) async fn answer(&mut self, id: &Value, result: Value) {
        self.send(&json!({"jsonrpc":"2.0","id":id,"result":result}).to_string())
            .await;
    }

    /// Reads `initialize` and answers it as an owner of version `major.minor`.
    pub(crate) async fn handshake(&mut self, major: u32, minor: u32) -> Value {
        let req = self.next().await.expect("initialize");
        assert_eq!(req["method"], "initialize", "{req}");
        self.answer(
            &req["id"],
            json!({"protocolVersion":{"major":major,"minor":minor},"serverInfo":{"name":"fake","version":"0"}}),
        )
        .await;
        req
    }
}

/// A client connected to a fake owner that has answered `initialize` (1.0).
pub(crate) async fn connected() -> (Client, Fake) {
    let (client, fake) = pair(ClientOptions::default());
    let mut fake = fake;
    let (client, _) = tokio::join!(client, fake.handshake(1, 0));
    (client.expect("initialized"), fake)
}

/// The client's connect future (not yet polled) and the fake owner.
pub(crate) fn pair(
    options: ClientOptions,
) -> (impl Future<Output = Result<Client, ClientError>>, Fake) {
    let (a, b) = tokio::io::duplex(1 << 20);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let fake = Fake {
        lines: BufReader::new(br).lines(),
        w: bw,
    };
    (Client::over(ar, aw, options), fake)
}
