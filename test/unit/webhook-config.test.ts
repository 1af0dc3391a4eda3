// The webhook service's configuration: its defaults and the values it
// refuses, naming the variable. No database.
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../services/shared/config.js";

describe("configuration", () => {
  it("has the documented defaults and reads the DNS servers", () => {
    const c = loadConfig({});
    expect(c.WEBHOOK_MAX_SUBSCRIPTIONS_PER_PAIR).toBe(100);
    expect(c.WEBHOOK_DNS_TIMEOUT_MS).toBe(3000);
    expect(c.WEBHOOK_DNS_SERVERS).toEqual([]);
    expect(
      loadConfig({ WEBHOOK_DNS_SERVERS: "1.1.1.1, 8.8.8.8:53,[2606:4700:4700::1111]:5353,::1" }).WEBHOOK_DNS_SERVERS,
    ).toEqual(["1.1.1.1", "8.8.8.8:53", "[2606:4700:4700::1111]:5353", "::1"]);
  });

  it.each([
    ["WEBHOOK_MAX_SUBSCRIPTIONS_PER_PAIR", "0"],
    ["WEBHOOK_MAX_SUBSCRIPTIONS_PER_PAIR", "lots"],
    ["WEBHOOK_DNS_TIMEOUT_MS", "10"],
    ["WEBHOOK_DNS_SERVERS", "dns.google"],
    ["WEBHOOK_DNS_SERVERS", "1.1.1.1:0"],
    ["WEBHOOK_DNS_SERVERS", "1.1.1.1:99999"],
    ["WEBHOOK_DNS_SERVERS", "[1.1.1.1]:53"],
  ])("refuses %s=%s naming the variable", (variable, value) => {
    let caught: unknown;
    try {
      loadConfig({ [variable]: value });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).variable).toBe(variable);
  });
});
