import type { ReplayedRequest } from "./replay";

/**
 * Identify requests as real Vero clients send them, taken from their public code and test
 * fixtures (each names its source: repository, file and version, or documentation page).
 * Path, headers and body are byte for byte what the client sends; {{AUTH_TOKEN}} marks where it
 * puts the credential. `expect` is what the profile read shows once the request is applied.
 */
export const IDENTIFY_REQUESTS: ReplayedRequest[] = [
  {
    client: "rudder-transformer",
    name: "rudder-transformer identify with id and traits (no email)",
    source:
      "rudderlabs/rudder-transformer@c98d160cfaddc5fe5ddee7891c4f4a23014b9aa8 test/integrations/destinations/vero/processor/data.ts (description 'Test 0')",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      "User-Agent": "RudderLabs",
    },
    body: '{"auth_token":"{{AUTH_TOKEN}}","data":{"age":"24","homwTown":"kanpur"},"id":"yash001"}',
    profile: "yash001",
    expect: {
      data: {
        homwTown: "kanpur",
        age: "24",
      },
    },
  },
  {
    client: "rudder-transformer",
    name: "rudder-transformer identify with id and email, empty data object",
    source:
      "rudderlabs/rudder-transformer@c98d160cfaddc5fe5ddee7891c4f4a23014b9aa8 test/integrations/destinations/vero/processor/data.ts ('Test 1'); same body shape as 'Test 8' and router/data.ts 'Test 0'",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      "User-Agent": "RudderLabs",
    },
    body: '{"auth_token":"{{AUTH_TOKEN}}","data":{},"email":"user1001@tech.com","id":"user1001"}',
    profile: "user1001",
    expect: {
      email: "user1001@tech.com",
      data: {},
    },
  },
  {
    client: "rudder-transformer",
    name: "rudder-transformer identify of anonymous user (anonymousId as id)",
    source:
      "rudderlabs/rudder-transformer@c98d160cfaddc5fe5ddee7891c4f4a23014b9aa8 test/integrations/destinations/vero/processor/data.ts ('Test 2')",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      "User-Agent": "RudderLabs",
    },
    body: '{"auth_token":"{{AUTH_TOKEN}}","data":{},"email":"user1002@tech.com","id":"b4ffheww8eisndbdjgdewifewfgerwibderv"}',
    profile: "b4ffheww8eisndbdjgdewifewfgerwibderv",
    expect: {
      email: "user1002@tech.com",
      data: {},
    },
  },
  {
    client: "rudder-transformer",
    name: "rudder-transformer identify with traits -> data, followed by tags edit",
    source:
      "rudderlabs/rudder-transformer@c98d160cfaddc5fe5ddee7891c4f4a23014b9aa8 test/integrations/destinations/vero/processor/data.ts ('Test 3')",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      "User-Agent": "RudderLabs",
    },
    body: '{"auth_token":"{{AUTH_TOKEN}}","data":{"address":"Caravela Beach Goa","homwTown":"Mawsynram"},"email":"user1005@tech.com","id":"fprediruser001"}',
    profile: "fprediruser001",
    expect: {
      email: "user1005@tech.com",
      data: {
        address: "Caravela Beach Goa",
        homwTown: "Mawsynram",
      },
    },
  },
  {
    client: "rudder-transformer",
    name: "rudder-transformer identify with push channel as a single object (not an array)",
    source:
      "rudderlabs/rudder-transformer@c98d160cfaddc5fe5ddee7891c4f4a23014b9aa8 test/integrations/destinations/vero/processor/data.ts ('Test 7')",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      "User-Agent": "RudderLabs",
    },
    body: '{"auth_token":"{{AUTH_TOKEN}}","channels":{"address":"qwertyuioiuytrewwertyu","device":"Mi","platform":"android","type":"push"},"data":{},"email":"user1001@tech.com","id":"user1001"}',
    profile: "user1001",
    expect: {
      email: "user1001@tech.com",
      data: {},
      channels: [
        {
          type: "push",
          address: "qwertyuioiuytrewwertyu",
          platform: "android",
        },
      ],
    },
  },
  {
    client: "rudder-transformer",
    name: "rudder-transformer router identify with id, email and empty data",
    source:
      "rudderlabs/rudder-transformer@c98d160cfaddc5fe5ddee7891c4f4a23014b9aa8 test/integrations/destinations/vero/router/data.ts ('Test 0')",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      "User-Agent": "RudderLabs",
    },
    body: '{"auth_token":"{{AUTH_TOKEN}}","data":{},"email":"user001@tech.com","id":"user001"}',
    profile: "user001",
    expect: {
      email: "user001@tech.com",
      data: {},
    },
  },
  {
    client: "n8n",
    name: "n8n user create with email and UI data attributes",
    source:
      "n8n-io/n8n packages/nodes-base/nodes/Vero/Vero.node.ts (user/create branch) + GenericFunctions.ts veroApiRequest + packages/@n8n/backend-network/src/http/axios/legacy.ts buildAxiosConfigFromLegacyRequest",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      Accept: "application/json",
      "content-type": "application/json",
      "User-Agent": "n8n",
    },
    body: '{"id":"123","email":"damienb@getvero.com","data":{"first_name":"Damien","last_name":"Brzoska"},"auth_token":"{{AUTH_TOKEN}}"}',
    profile: "123",
    expect: {
      email: "damienb@getvero.com",
      data: {
        first_name: "Damien",
        last_name: "Brzoska",
      },
    },
  },
  {
    client: "n8n",
    name: "n8n user create with JSON parameters (typed data, no email)",
    source:
      "n8n-io/n8n packages/nodes-base/nodes/Vero/Vero.node.ts (user/create branch) + GenericFunctions.ts veroApiRequest + packages/@n8n/backend-network/src/http/axios/legacy.ts buildAxiosConfigFromLegacyRequest (jsonParameters=true -> dataAttributesJson)",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      Accept: "application/json",
      "content-type": "application/json",
      "User-Agent": "n8n",
    },
    body: '{"id":"124","data":{"subscription":"medium","age":30,"vip":true},"auth_token":"{{AUTH_TOKEN}}"}',
    profile: "124",
    expect: {
      data: {
        subscription: "medium",
        age: 30,
        vip: true,
      },
    },
  },
  {
    client: "n8n",
    name: "n8n user create with id only (no email, no data key)",
    source:
      "n8n-io/n8n packages/nodes-base/nodes/Vero/Vero.node.ts (user/create branch) + GenericFunctions.ts veroApiRequest + packages/@n8n/backend-network/src/http/axios/legacy.ts buildAxiosConfigFromLegacyRequest",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      Accept: "application/json",
      "content-type": "application/json",
      "User-Agent": "n8n",
    },
    body: '{"id":"125","auth_token":"{{AUTH_TOKEN}}"}',
    profile: "125",
    expect: {},
  },
  {
    client: "n8n",
    name: "n8n (legacy request-library era) user create, form-urlencoded with bracket-nested data",
    source:
      "n8n-io/n8n packages/nodes-base/nodes/Vero/GenericFunctions.ts (form: {auth_token, ...body}, json: true) as executed by the npm 'request' library (Request.prototype.form then .json)",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      accept: "application/json",
    },
    body: "auth_token={{AUTH_TOKEN}}&id=123&email=damienb%40getvero.com&data%5Bfirst_name%5D=Damien&data%5Blast_name%5D=Brzoska",
    profile: "123",
    expect: {
      email: "damienb@getvero.com",
      data: {
        first_name: "Damien",
        last_name: "Brzoska",
      },
    },
  },
  {
    client: "tracking.js",
    name: "tracking.js identify (Node) with push channel and data",
    source:
      "getvero/tracking.js@d02ab8c8637e99dbe85f6162d71ec3f0d7bfce7a src/tracker.test.ts 'Node environment' > 'WHEN user.identify is called'; body built by src/tracker.ts user.identify",
    method: "POST",
    path: "/api/v2/users/track?tracking_api_key={{AUTH_TOKEN}}",
    headers: {
      Accept: "application/json",
      "Content-Type": "application/json",
    },
    body: '{"id":"test-user-id","email":"test@example.com","channels":[{"type":"push","address":"test-123","platform":"android"}],"data":{"first_name":"test","last_name":"test"}}',
    profile: "test-user-id",
    expect: {
      email: "test@example.com",
      data: {
        first_name: "test",
        last_name: "test",
      },
      channels: [
        {
          type: "push",
          address: "test-123",
          platform: "android",
        },
      ],
    },
  },
  {
    client: "tracking.js",
    name: "tracking.js identify (Node) with id and email only: empty channels array and empty data",
    source:
      "getvero/tracking.js@d02ab8c8637e99dbe85f6162d71ec3f0d7bfce7a README.md usage tracker.user.identify({id, email}); body built by src/tracker.ts user.identify",
    method: "POST",
    path: "/api/v2/users/track?tracking_api_key={{AUTH_TOKEN}}",
    headers: {
      Accept: "application/json",
      "Content-Type": "application/json",
    },
    body: '{"id":"test-user-id","email":"test@example.com","channels":[],"data":{}}',
    profile: "test-user-id",
    expect: {
      email: "test@example.com",
      data: {},
    },
  },
  {
    client: "tracking.js",
    name: "tracking.js identify (browser) with reserved language/timezone/ianaTimezone/userAgent merged into data",
    source:
      "getvero/tracking.js@d02ab8c8637e99dbe85f6162d71ec3f0d7bfce7a src/tracker.test.ts 'browser environment' > 'WHEN user.identify is called' (mocked getDefaultReservedUserData)",
    method: "POST",
    path: "/api/v2/users/track?tracking_api_key={{AUTH_TOKEN}}",
    headers: {
      Accept: "application/json",
      "Content-Type": "application/json",
    },
    body: '{"id":"test-user-id","email":"test@example.com","channels":[{"type":"push","address":"test-123","platform":"android"}],"data":{"first_name":"test","last_name":"test","language":"en","timezone":10,"ianaTimezone":"Australia/Sydney","userAgent":"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/108.0.0.0 Safari/537.36"}}',
    profile: "test-user-id",
    expect: {
      email: "test@example.com",
      data: {
        first_name: "test",
        last_name: "test",
        language: "en",
        timezone: 10,
        ianaTimezone: "Australia/Sydney",
        userAgent:
          "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/108.0.0.0 Safari/537.36",
      },
    },
  },
  {
    client: "vero-docs",
    name: "vero-docs current identify curl (JSON, auth_token in query, numeric id, push channel)",
    source: "https://help.getvero.com/api-reference/users/identify (curl example)",
    method: "POST",
    path: "/api/v2/users/track?auth_token={{AUTH_TOKEN}}",
    headers: {
      "Content-Type": "application/json",
    },
    body: '\n{\n  "id": 1000,\n  "email": "test@example.com",\n  "channels": [\n    {\n      "type": "push",\n      "address": "UNIQUE_DEVICE_TOKEN",\n      "platform": "android"\n    }\n  ],\n  "data": {\n    "first_name": "Damien",\n    "last_name": "Brzoska",\n    "timezone": -10\n  }\n}\n',
    profile: "1000",
    expect: {
      email: "test@example.com",
      data: {
        first_name: "Damien",
        last_name: "Brzoska",
        timezone: -10,
      },
      channels: [
        {
          type: "push",
          address: "UNIQUE_DEVICE_TOKEN",
          platform: "android",
        },
      ],
    },
  },
  {
    client: "vero-docs",
    name: "vero-docs identify with SMS phone_number (schema defaults)",
    source: "https://help.getvero.com/api-reference/track/users/identity (Identify, OpenAPI body schema defaults)",
    method: "POST",
    path: "/api/v2/users/track?auth_token={{AUTH_TOKEN}}",
    headers: {
      "Content-Type": "application/json",
    },
    body: '\n{\n  "id": "1000",\n  "email": "test@example.com",\n  "phone_number": "+614123456789",\n  "data": {}\n}\n',
    profile: "1000",
    expect: {
      email: "test@example.com",
      phone_number: "+614123456789",
      data: {},
    },
  },
  {
    client: "vero-docs",
    name: "vero-docs 2016 identify curl: form-urlencoded with data as a JSON string",
    source:
      "drianpauL/developers.getvero.com@1a59152cd71d6032ecbf47fa59ea8d96cdaf0907 _includes/users/identify/example.md (mirror of developers.getvero.com, Jan 2016)",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      "Content-Type": "application/x-www-form-urlencoded",
    },
    body: 'auth_token={{AUTH_TOKEN}}&id=123&email=damienb@getvero.com&data={"first_name": "Damien", "last_name": "Brzoska", "subscription": "medium"}',
    profile: "123",
    expect: {
      email: "damienb@getvero.com",
      data: {
        first_name: "Damien",
        last_name: "Brzoska",
        subscription: "medium",
      },
    },
  },
  {
    client: "vero-docs",
    name: "vero-docs 2013 identify JSON with auth_token and development_mode in body",
    source:
      "stinkyink/vero-api@e21d0e586123d96bc1ec3039f72306decb92c61f sections/api/users.md ('Create users', fork of Vero's 2013 getvero/vero-api docs)",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      "Content-Type": "application/json",
    },
    body: '{\n  "auth_token": "{{AUTH_TOKEN}}",\n  "id": "user_id",\n  "email": "an_email_address@yourdomain.com",\n  "data": {\n    "first_name": "James",\n    "age": 25\n  },\n  "development_mode": false\n}',
    profile: "user_id",
    expect: {
      email: "an_email_address@yourdomain.com",
      data: {
        first_name: "James",
        age: 25,
      },
    },
  },
  {
    client: "vero-gem-2012",
    name: "vero gem 0.4 (Oct 2012) Trackable#identify! -> users/track.json, form-encoded, development_mode=true",
    source:
      "getvero/vero lib/vero/context.rb#identify! + lib/vero/api/users/track_api.rb (RestClient.post(url, @options)) @3ab6407 (VERSION 0.4; same through 0.4.4 @9550a8e); spec/lib/trackable_spec.rb 'describe :identify!' @3ab6407",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      "Content-Type": "application/x-www-form-urlencoded",
      Accept: "*/*; q=0.5, application/xml",
      "Accept-Encoding": "gzip, deflate",
    },
    body: "auth_token={{AUTH_TOKEN}}&development_mode=true&email=durkster%40gmail.com&data[email]=durkster%40gmail.com&data[age]=20&data[_user_type]=User",
    profile: "durkster@gmail.com",
    expect: {
      email: "durkster@gmail.com",
      data: {
        email: "durkster@gmail.com",
        age: "20",
        _user_type: "User",
      },
    },
  },
  {
    client: "vero-gem-2012",
    name: "vero gem 0.4 (2012) Trackable#identify! in production (no development_mode), form-encoded",
    source:
      "getvero/vero lib/vero/config.rb#request_params (drops blank values; false.blank? == true) + lib/vero/context.rb#identify! @3ab6407",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      "Content-Type": "application/x-www-form-urlencoded",
      Accept: "*/*; q=0.5, application/xml",
      "Accept-Encoding": "gzip, deflate",
    },
    body: "auth_token={{AUTH_TOKEN}}&email=durkster%40gmail.com&data[email]=durkster%40gmail.com&data[age]=20&data[_user_type]=User",
    profile: "durkster@gmail.com",
    expect: {
      email: "durkster@gmail.com",
      data: {
        email: "durkster@gmail.com",
        age: "20",
        _user_type: "User",
      },
    },
  },
  {
    client: "vero-gem-2012",
    name: "vero gem 0.4 (2012) TrackAPI spec request: auth_token + identity[email] + email, form-encoded",
    source:
      "getvero/vero spec/lib/api/users/track_api_spec.rb 'describe :request' @3ab6407 (RestClient.should_receive(:post).with('https://www.getvero.com/api/v2/users/track.json', {:auth_token => 'abcd', :identity => {:email => 'test@test.com'}, :email => 'test@test.com'}))",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      "Content-Type": "application/x-www-form-urlencoded",
      Accept: "*/*; q=0.5, application/xml",
      "Accept-Encoding": "gzip, deflate",
    },
    body: "auth_token={{AUTH_TOKEN}}&identity[email]=test%40test.com&email=test%40test.com",
    profile: "test@test.com",
    expect: {
      email: "test@test.com",
    },
  },
  {
    client: "vero-gem-2013",
    name: "vero gem 0.5.0 (Feb 2013) Trackable#identify! JSON via to_json, development_mode=true",
    source:
      "getvero/vero lib/vero/api/base_api.rb (request_params_as_json = @options.to_json; request_content_type = {:content_type => :json, :accept => :json}) + lib/vero/context.rb#identify! @0.5.0 (JSON switch in ed14a72, 2013-01-05, v0.4.5); spec/lib/trackable_spec.rb 'describe :identify!' @0.5.0",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json",
      "Accept-Encoding": "gzip, deflate",
    },
    body: '{"auth_token":"{{AUTH_TOKEN}}","development_mode":true,"email":"durkster@gmail.com","data":{"email":"durkster@gmail.com","age":20,"_user_type":"User"}}',
    profile: "durkster@gmail.com",
    expect: {
      email: "durkster@gmail.com",
      data: {
        email: "durkster@gmail.com",
        age: 20,
        _user_type: "User",
      },
    },
  },
  {
    client: "vero-gem-pre-2025",
    name: "vero gem 0.10.0 (2020) Trackable#identify! JSON with id:null, auth_token + development_mode:false appended",
    source:
      "getvero/vero lib/vero/context/api.rb#identify!, lib/vero/api.rb#run_api (options.merge!(config.request_params)), lib/vero/api/users/track_api.rb, lib/vero/api/base_api.rb (JSON.dump) @5e82f7e (VERSION 0.10.0); spec/lib/trackable_spec.rb 'describe :identify!' (request_params id: nil, email: 'durkster@gmail.com')",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json",
    },
    body: '{"id":null,"email":"durkster@gmail.com","data":{"email":"durkster@gmail.com","age":20,"_user_type":"User"},"auth_token":"{{AUTH_TOKEN}}","development_mode":false}',
    profile: "durkster@gmail.com",
    expect: {
      email: "durkster@gmail.com",
      data: {
        email: "durkster@gmail.com",
        age: 20,
        _user_type: "User",
      },
    },
  },
  {
    client: "vero-gem-pre-2025",
    name: "vero gem 0.10.0 (2020) Vero::Api::Users.track!({email:, data: {age: 25}}) JSON (api_spec values)",
    source:
      "getvero/vero spec/lib/api_spec.rb 'describe Vero::Api::Users / :track!' (input {email: 'james@getvero.com', data: {age: 25}}, expected input.merge(auth_token: 'abc123', development_mode: true)) @5e82f7e",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json",
    },
    body: '{"email":"james@getvero.com","data":{"age":25},"auth_token":"{{AUTH_TOKEN}}","development_mode":true}',
    profile: "james@getvero.com",
    expect: {
      email: "james@getvero.com",
      data: {
        age: 25,
      },
    },
  },
  {
    client: "vero-gem-pre-2025",
    name: "vero gem 0.10.0 (2020) README DSL vero.users.track!({:id => 123, :data => {}}) JSON, integer id",
    source:
      "getvero/vero README.markdown 'Simple DSL' (# Identifying a user) @5e82f7e; lib/vero/dsl.rb, lib/vero/api.rb",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json",
    },
    body: '{"id":123,"data":{},"auth_token":"{{AUTH_TOKEN}}","development_mode":false}',
    profile: "123",
    expect: {
      data: {},
    },
  },
  {
    client: "vero-gem-current",
    name: "vero gem 1.0.0 (2025) Trackable#identify! JSON with id:null and tracking_api_key",
    source:
      "getvero/vero lib/vero/api_context.rb#identify!, lib/vero/api/base.rb#run_api, lib/vero/config.rb#request_params, lib/vero/api/workers/base_api.rb#request (@options.except(:_config)), lib/vero/http_client.rb (JSON.dump, {content_type: :json, accept: :json}) @0f63485 (VERSION 1.0.0); spec/lib/vero/trackable_spec.rb '.identify!' (email 'user@getvero.com')",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json",
    },
    body: '{"id":null,"email":"user@getvero.com","data":{"email":"user@getvero.com","age":20,"_user_type":"User"},"tracking_api_key":"{{AUTH_TOKEN}}"}',
    profile: "user@getvero.com",
    expect: {
      email: "user@getvero.com",
      data: {
        email: "user@getvero.com",
        age: 20,
        _user_type: "User",
      },
    },
  },
  {
    client: "vero-gem-current",
    name: "vero gem 1.0.0 (2025) Vero::Api::Users.track!({email:, data: {age: 25}}) JSON (users_spec values)",
    source:
      "getvero/vero spec/lib/vero/api/users_spec.rb '.track!' (input {email: 'james@getvero.com', data: {age: 25}}, expected input.merge(tracking_api_key: 'abc123', _config: {http_timeout: 60})) @0f63485",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json",
    },
    body: '{"email":"james@getvero.com","data":{"age":25},"tracking_api_key":"{{AUTH_TOKEN}}"}',
    profile: "james@getvero.com",
    expect: {
      email: "james@getvero.com",
      data: {
        age: 25,
      },
    },
  },
  {
    client: "vero-gem-current",
    name: "vero gem 1.0.0 (2025) README DSL vero.users.track!({:id => 123, :data => {}}) JSON",
    source: "getvero/vero README.markdown 'Simple DSL' @0f63485",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      "Content-Type": "application/json",
      Accept: "application/json",
    },
    body: '{"id":123,"data":{},"tracking_api_key":"{{AUTH_TOKEN}}"}',
    profile: "123",
    expect: {
      data: {},
    },
  },
  {
    client: "vero-php-2013",
    name: 'vero-php 2013 customer.php example: JSON with development_mode "false" (string)',
    source: "getvero/vero-php customer.php @93f9223 (2013-04-25)",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      Accept: "application/json",
      "Content-Type": "application/json",
    },
    body: '{"auth_token":"{{AUTH_TOKEN}}","id":"12345","email":"user@domain.com","data":{"first_name":"Chris","last_name":"Hexton"},"development_mode":"false"}',
    profile: "12345",
    expect: {
      email: "user@domain.com",
      data: {
        first_name: "Chris",
        last_name: "Hexton",
      },
    },
  },
  {
    client: "vero-php-2015",
    name: "vero-php 2014-2015 Vero::identify with development_mode false (bool), email appended last",
    source: "getvero/vero-php vero/client.php Client::identify + _send @58e4efc (2015-09-21); README.md example",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      Accept: "application/json",
      "Content-Type": "application/json",
    },
    body: '{"auth_token":"{{AUTH_TOKEN}}","id":"1234567890","data":{"First name":"Jeff","Last name":"Kane"},"development_mode":false,"email":"jeff@yourdomain.com"}',
    profile: "1234567890",
    expect: {
      email: "jeff@yourdomain.com",
      data: {
        "First name": "Jeff",
        "Last name": "Kane",
      },
    },
  },
  {
    client: "vero-php",
    name: "vero-php current (2016+) README identify: JSON auth_token,id,data,email",
    source:
      "getvero/vero-php vero/client.php Client::identify + _send @687df20 (HEAD); README.md ($v->identify(\"1234567890\", \"jeff@yourdomain.com\", array('First name' => 'Jeff', 'Last name' => 'Kane')))",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      Accept: "application/json",
      "Content-Type": "application/json",
    },
    body: '{"auth_token":"{{AUTH_TOKEN}}","id":"1234567890","data":{"First name":"Jeff","Last name":"Kane"},"email":"jeff@yourdomain.com"}',
    profile: "1234567890",
    expect: {
      email: "jeff@yourdomain.com",
      data: {
        "First name": "Jeff",
        "Last name": "Kane",
      },
    },
  },
  {
    client: "vero-php",
    name: "vero-php current identify with id only: data null, no email",
    source:
      "getvero/vero-php vero/client.php Client::identify ('data' => ($data == array() ? NULL : $data); email only if truthy) @687df20; vero.php Vero::identify($user_id, $email = null, $data = array())",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      Accept: "application/json",
      "Content-Type": "application/json",
    },
    body: '{"auth_token":"{{AUTH_TOKEN}}","id":"1234567890","data":null}',
    profile: "1234567890",
    expect: {
      data: {},
    },
  },
  {
    client: "getvero-go",
    name: "getvero-go IdentifyUserWithEmail with map data (README)",
    source:
      'StirlingMarketingGroup/getvero-go users.go IdentifyUserWithEmail + main.go sendToVero @bfee06b; README.md \'Add User\' (d["CountryID"]=235, d["PhoneNumber"]="+1-202-555-0127", d["pi"]=3.14159)',
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      "Content-Type": "application/json",
    },
    body: '{"auth_token":"{{AUTH_TOKEN}}","id":"123abdf58546","email":"superfakeemailaddresss@example.com","data":{"CountryID":235,"PhoneNumber":"+1-202-555-0127","pi":3.14159}}',
    profile: "123abdf58546",
    expect: {
      email: "superfakeemailaddresss@example.com",
      data: {
        CountryID: 235,
        PhoneNumber: "+1-202-555-0127",
        pi: 3.14159,
      },
    },
  },
  {
    client: "getvero-go",
    name: "getvero-go IdentifyUserWithEmail(1337, email) without data: data omitted",
    source:
      'StirlingMarketingGroup/getvero-go users.go IdentifyUserWithEmail @bfee06b; README.md v.IdentifyUserWithEmail(1337, "fakeemail@example.com")',
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      "Content-Type": "application/json",
    },
    body: '{"auth_token":"{{AUTH_TOKEN}}","id":"1337","email":"fakeemail@example.com"}',
    profile: "1337",
    expect: {
      email: "fakeemail@example.com",
    },
  },
  {
    client: "getvero-go",
    name: "getvero-go IdentifyUserWithoutEmail(897654): auth_token + id only",
    source:
      "StirlingMarketingGroup/getvero-go users.go IdentifyUserWithoutEmail @bfee06b; README.md v.IdentifyUserWithoutEmail(897654)",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      "Content-Type": "application/json",
    },
    body: '{"auth_token":"{{AUTH_TOKEN}}","id":"897654"}',
    profile: "897654",
    expect: {},
  },
  {
    client: "vero-ios",
    name: "vero-ios 2014+ usersTrack (NSJSONSerialization pretty-printed, Content-Type ...; encoding=utf-8)",
    source:
      'getvero/vero-ios Vero.m makeApiCall + usersTrack:email:data:developmentMode: @19db810 (code from 50c7270, 2014-01-31); README.md [vero usersTrack:@"james@getvero" email:nil data:me developmentMode:false]',
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      "Content-Type": "application/json; encoding=utf-8",
      Accept: "application/json",
    },
    body: '{\n  "auth_token" : "{{AUTH_TOKEN}}",\n  "development_mode" : false,\n  "id" : "james@getvero",\n  "data" : {\n    "id" : "james@getvero.com",\n    "age" : 25\n  }\n}',
    profile: "james@getvero",
    expect: {
      data: {
        id: "james@getvero.com",
        age: 25,
      },
    },
  },
  {
    client: "vero-ios-2013",
    name: "vero-ios 2013 usersTrack (JSONKit compact, ASIHTTPRequest) - development_mode lost to nil-terminator bug",
    source:
      "getvero/vero-ios Vero.m makeApiCall ([params JSONString]) + usersTrack @4218a0b (2013-07-11; before that URL was https://www.getvero.com/...)",
    method: "POST",
    path: "/api/v2/users/track.json",
    headers: {
      "Content-Type": "application/json; encoding=utf-8",
      Accept: "application/json",
    },
    body: '{"auth_token":"{{AUTH_TOKEN}}","id":"james@getvero","data":{"id":"james@getvero.com","age":25}}',
    profile: "james@getvero",
    expect: {
      data: {
        id: "james@getvero.com",
        age: 25,
      },
    },
  },
  {
    client: "vero-node",
    name: "vero-node 0.0.1 identify({id: 1}) (test) - /api/v2/users/track without .json",
    source:
      "jylamont/vero-node lib/index.js Vero.prototype.identify/queue, ENDPOINTS.IDENTIFY @1736adb (package.json name 'vero', repository getvero/vero-node); test/tests.js '#identify should send a message to IDENTIFY endpoint'",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      "Content-Type": "application/json",
    },
    body: '{"id":1,"auth_token":"{{AUTH_TOKEN}}"}',
    profile: "1",
    expect: {},
  },
  {
    client: "vero-node",
    name: "vero-node README identify with userProperties (data under a non-Vero key)",
    source:
      "jylamont/vero-node README.md veroClient.identify({id: 'jeff@yourdomain.com', userProperties: {firstName: 'Jeff', lastName: 'Kane'}}) + lib/index.js queue @1736adb",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      "Content-Type": "application/json",
    },
    body: '{"id":"jeff@yourdomain.com","userProperties":{"firstName":"Jeff","lastName":"Kane"},"auth_token":"{{AUTH_TOKEN}}"}',
    profile: "jeff@yourdomain.com",
    expect: {
      data: {},
    },
  },
  {
    client: "vero-python-1.x",
    name: "vero-python 1.x add_user: JSON string body with NO Content-Type, development_mode false",
    source:
      "waveaccounting/vero-python vero/client.py _fire_request (requests.request(method, url, data=json.dumps(payload))) + add_user @d41606f (v1.3.0, 2015-09-18); identical code in the official fork getvero/vero-python vero/client.py @2cf358d (2015-07-06)",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {},
    body: '{"auth_token": "{{AUTH_TOKEN}}", "id": 1, "email": "johndoe@example.com", "data": {"first name": "John", "last name": "Doe"}, "development_mode": false}',
    profile: "1",
    expect: {
      email: "johndoe@example.com",
      data: {
        "first name": "John",
        "last name": "Doe",
      },
    },
  },
  {
    client: "vero-python",
    name: "vero-python 2.x add_user with email (requests json=)",
    source:
      "waveaccounting/vero-python vero/client.py add_user + _fire_request (requests.request(..., json=payload)) @c1c21f8 (v2.0.1); README.rst 'Add user'",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      "Content-Type": "application/json",
    },
    body: '{"auth_token": "{{AUTH_TOKEN}}", "id": 1, "email": "johndoe@example.com", "data": {"first name": "John", "last name": "Doe"}}',
    profile: "1",
    expect: {
      email: "johndoe@example.com",
      data: {
        "first name": "John",
        "last name": "Doe",
      },
    },
  },
  {
    client: "vero-python",
    name: 'vero-python 2.x add_user without email: "email": null',
    source: "waveaccounting/vero-python vero/tests/client_test.py test_add_user @c1c21f8",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      "Content-Type": "application/json",
    },
    body: '{"auth_token": "{{AUTH_TOKEN}}", "id": 1, "email": null, "data": {"first_name": "John", "last_name": "Smith", "birthdate": "1965-01-31", "phone": "555-555-5555"}}',
    profile: "1",
    expect: {
      data: {
        first_name: "John",
        last_name: "Smith",
        birthdate: "1965-01-31",
        phone: "555-555-5555",
      },
    },
  },
  {
    client: "vero-docs-push",
    name: "Vero push integration guide identify with channels (docs JSON, trailing comma removed)",
    source:
      "find_string hit id 34082955980 (Vero help article 'Mobile push notifications - Integration Guide', section 3 'Identify device tokens with Vero'; repository not reported by the index)",
    method: "POST",
    path: "/api/v2/users/track",
    headers: {
      "Content-Type": "application/json",
    },
    body: '{\n  "auth_token": "{{AUTH_TOKEN}}",\n  "id": "james@getvero.com",\n  "data": { \n    "age": 30 \n  },\n  "channels": [\n    { \n      "type": "push", \n      "address": "UNIQUE_DEVICE_TOKEN", \n      "platform": "ios" \n    }\n  ]\n}',
    profile: "james@getvero.com",
    expect: {
      data: {
        age: 30,
      },
      channels: [
        {
          type: "push",
          address: "UNIQUE_DEVICE_TOKEN",
          platform: "ios",
        },
      ],
    },
  },
];
