import { describe, expect, it } from "vitest";
import { identifyCredential } from "../../apps/gateway/src/auth/authenticate";
import { repeatedBodyCredentials } from "../../apps/gateway/src/auth/repeated-credentials";
import { FormBodyError, parseFormBody } from "../../apps/gateway/src/body/form";

/** Null-prototype objects compare like plain ones once through JSON. */
const parsed = (text: string) => JSON.parse(JSON.stringify(parseFormBody(text))) as unknown;

describe("parseFormBody (Rack's bracket nesting)", () => {
  it("nests bracketed names and keeps every value a string", () => {
    expect(
      parsed("id=7&email=ada%40example.com&data[age]=20&data[name]=Ada+Lovelace&extras[created_at]=1700000000"),
    ).toEqual({
      id: "7",
      email: "ada@example.com",
      data: { age: "20", name: "Ada Lovelace" },
      extras: { created_at: "1700000000" },
    });
  });

  it("reads lists written with indices (PHP, qs) and with empty brackets (Ruby, Rack)", () => {
    const channels = [
      { type: "push", address: "t1", platform: "ios" },
      { type: "push", address: "t2" },
    ];
    expect(
      parsed(
        "channels[0][type]=push&channels[0][address]=t1&channels[0][platform]=ios&channels[1][type]=push&channels[1][address]=t2",
      ),
    ).toEqual({ channels });
    expect(
      parsed(
        "channels[][type]=push&channels[][address]=t1&channels[][platform]=ios&channels[][type]=push&channels[][address]=t2",
      ),
    ).toEqual({ channels });
    expect(parsed("data[tags][]=a&data[tags][]=b")).toEqual({ data: { tags: ["a", "b"] } });
    expect(parsed("channels%5B0%5D%5Btype%5D=sms&channels%5B0%5D%5Baddress%5D=%2B15550100")).toEqual({
      channels: [{ type: "sms", address: "+15550100" }],
    });
  });

  it("keeps names that an object's prototype has as plain fields", () => {
    const fields = parseFormBody("data[toString]=x&data[constructor]=y&__proto__[polluted]=1") as Record<
      string,
      unknown
    >;
    expect(JSON.parse(JSON.stringify(fields))).toEqual({
      data: { toString: "x", constructor: "y" },
      ["__proto__"]: { polluted: "1" },
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("reads a name without a value as null and skips empty pairs", () => {
    expect(parsed("id=&email&&data[a]=1")).toEqual({ id: "", email: null, data: { a: "1" } });
  });

  it("refuses malformed encodings, mixed shapes and runaway nesting", () => {
    expect(() => parseFormBody("id=%E0%A4%A")).toThrow(FormBodyError);
    expect(() => parseFormBody("data=x&data[a]=1")).toThrow(FormBodyError);
    expect(() => parseFormBody("data[a][b]=2&data[a]=1")).toThrow(FormBodyError);
    expect(() => parseFormBody("data[a]=1&data={}")).toThrow(FormBodyError);
    expect(() => parseFormBody("add[]=a&add=[]")).toThrow(FormBodyError);
    expect(() => parseFormBody("tags[]=a&tags[b]=1")).toThrow(FormBodyError);
    expect(() => parseFormBody(`a${"[b]".repeat(40)}=1`)).toThrow(FormBodyError);
  });
});

describe("identifyCredential", () => {
  it("takes auth_token or tracking_api_key from the query or the body", () => {
    expect(identifyCredential("auth_token=t1", {})).toBe("t1");
    expect(identifyCredential("tracking_api_key=t1", undefined)).toBe("t1");
    expect(identifyCredential("", { auth_token: "t1" })).toBe("t1");
    expect(identifyCredential("", { tracking_api_key: "t1", id: 3 })).toBe("t1");
    expect(identifyCredential("auth_token=t1", { tracking_api_key: "t1" })).toBe("t1");
  });

  it("is null when none is given, one is empty or not text, or those given disagree", () => {
    expect(identifyCredential("", { id: 1 })).toBeNull();
    expect(identifyCredential("auth_token=", {})).toBeNull();
    expect(identifyCredential("", { auth_token: 42 })).toBeNull();
    expect(identifyCredential("", { auth_token: ["t1"] })).toBeNull();
    expect(identifyCredential("auth_token=t1", { auth_token: "t2" })).toBeNull();
    expect(identifyCredential("auth_token=t1&auth_token=t2", {})).toBeNull();
    expect(identifyCredential("auth_token=t1&tracking_api_key=t2", {})).toBeNull();
    expect(identifyCredential("auth_token=t1", { tracking_api_key: "" })).toBeNull();
  });
});

describe("repeatedBodyCredentials", () => {
  it("finds every value of a credential named more than once at the top of a JSON or form body", () => {
    expect(repeatedBodyCredentials('{"auth_token":"a","id":"u"}', false)).toEqual([]);
    expect(repeatedBodyCredentials('{"auth_token":"a","data":{"x":[1,"}"]},"auth_token" : "b"}', false)).toEqual([
      "a",
      "b",
    ]);
    // A credential name inside data is no credential.
    expect(repeatedBodyCredentials('{"auth_token":"a","data":{"auth_token":"z"}}', false)).toEqual(["a"]);
    expect(repeatedBodyCredentials("auth_token=a&id=u&auth_token=b", true)).toEqual(["a", "b"]);
    expect(identifyCredential("", { auth_token: "b" }, ["a", "b"])).toBeNull();
    expect(identifyCredential("", { auth_token: "a" }, ["a", "a"])).toBe("a");
  });
});
