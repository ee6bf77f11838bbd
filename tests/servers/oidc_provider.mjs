// A real OpenID provider for the OAuth tests: panva's `oidc-provider` (npm), issuing
// RFC 9068 JWT access tokens through the client_credentials grant with resource
// indicators (the token's `aud` is the requested `resource`).
//
// Run: node oidc_provider.mjs PATH/TO/oidc-provider/lib/index.js CONFIG.json
// CONFIG: {"issuer", "port", "jwks": {"keys": [private JWKs]}, "sign_kid",
//          "scopes": [...], "clients": [{"client_id", "client_secret", "scope",
//          "ttl", "claims": {...extra token claims}}]}
// Prints "listening" on stdout once it accepts connections.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [modulePath, configPath] = process.argv.slice(2);
const { default: Provider } = await import(pathToFileURL(modulePath).href);
const cfg = JSON.parse(readFileSync(configPath, 'utf8'));
const clients = Object.fromEntries(cfg.clients.map((c) => [c.client_id, c]));

const provider = new Provider(cfg.issuer, {
  clients: cfg.clients.map((c) => ({
    client_id: c.client_id,
    client_secret: c.client_secret,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_post',
    scope: c.scope,
  })),
  jwks: cfg.jwks,
  scopes: cfg.scopes,
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resourceIndicator, client) => ({
        scope: cfg.scopes.join(' '),
        audience: resourceIndicator,
        accessTokenTTL: clients[client.clientId].ttl,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'RS256', kid: cfg.sign_kid } },
      }),
    },
  },
  extraTokenClaims: (ctx, token) => clients[token.clientId]?.claims,
});

const server = provider.listen(cfg.port, '127.0.0.1', () => {
  process.stdout.write('listening\n');
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
