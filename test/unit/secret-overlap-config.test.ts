// WEBHOOK_SECRET_OVERLAP_SECONDS: how long a rotated secret keeps signing.
// Its default, its bounds (0 to 30 days), and the values it refuses, naming
// the variable. No database.
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../services/shared/config.js";

describe("WEBHOOK_SECRET_OVERLAP_SECONDS", () => {
  it("is a day by default; 0 (no overlap) and 30 days are allowed", () => {
    expect(loadConfig({}).WEBHOOK_SECRET_OVERLAP_SECONDS).toBe(86_400);
    expect(loadConfig({ WEBHOOK_SECRET_OVERLAP_SECONDS: "" }).WEBHOOK_SECRET_OVERLAP_SECONDS).toBe(86_400);
    expect(loadConfig({ WEBHOOK_SECRET_OVERLAP_SECONDS: "0" }).WEBHOOK_SECRET_OVERLAP_SECONDS).toBe(0);
    expect(loadConfig({ WEBHOOK_SECRET_OVERLAP_SECONDS: "2592000" }).WEBHOOK_SECRET_OVERLAP_SECONDS).toBe(2_592_000);
  });

  it.each(["2592001", "-1", "1.5", "a day"])("refuses %s naming the variable", (value) => {
    let caught: unknown;
    try {
      loadConfig({ WEBHOOK_SECRET_OVERLAP_SECONDS: value });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).variable).toBe("WEBHOOK_SECRET_OVERLAP_SECONDS");
  });
});
