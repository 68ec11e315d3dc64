// A local OAuth 2 authorization server for mcpbox's login tests: the pinned
// oauth2-mock-server (OpenID discovery, authorization code with PKCE, token
// endpoint, real RS256 signatures) on 127.0.0.1, a port of its own choosing.
//
//   node oauth_server.mjs [MODE]
//
// Prints one JSON line, {"issuer": "http://127.0.0.1:PORT"}, once it listens,
// and stops when its stdin closes (so it never outlives the test that started it).
// MODE bends one thing, for the tests of bad input:
//   ok             (default) behaves
//   token-500      the token endpoint answers 500 with an HTML page
//   wrong-issuer   the discovery document names another issuer
import { OAuth2Server, Events } from "oauth2-mock-server";

const mode = process.argv[2] ?? "ok";
const server = new OAuth2Server();
await server.issuer.keys.generate("RS256");

if (mode === "token-500") {
  server.service.on(Events.BeforeResponse, (response) => {
    response.statusCode = 500;
    response.body = "<html><body>Internal Server Error</body></html>";
  });
} else if (mode === "wrong-issuer") {
  server.service.on(Events.BeforeWellKnownOpenIdConfiguration, (response) => {
    response.body.issuer = "http://issuer.invalid";
  });
} else if (mode !== "ok") {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}

await server.start(0, "127.0.0.1");
console.log(JSON.stringify({ issuer: server.issuer.url }));

process.stdin.resume();
process.stdin.on("end", async () => {
  await server.stop();
  process.exit(0);
});
