import { randomUUID } from "node:crypto";
import {
  AbortedError,
  type PlanReview,
  type PlanReviewDecision,
  PlanValidationError,
  type ReviewPlan,
  validateTaskLedger,
} from "@taskledger/core";
import type { ReviewView } from "./view.js";

/** What the page sends to answer a review. */
export interface PageAnswer {
  id: string;
  action: "approve" | "edit" | "reject";
  ledger?: unknown;
  reason?: string;
}

/** How an answer from the page was taken: `error` is shown on the page as it is. */
export type AnswerResult = { ok: true } | { ok: false; status: number; error: string };

/**
 * Holds the plan or replan waiting for the page's answer. `reviewPlan` asks the page; `answer`
 * is what the page's POST calls. An edit is validated here, so its errors show on the page.
 */
export class ReviewBroker {
  #pending:
    | { view: ReviewView; resolve: (decision: PlanReviewDecision) => void; maxSubTasks: number }
    | undefined;
  readonly #listeners = new Set<() => void>();

  constructor(private readonly maxSubTasks: number) {}

  get pending(): ReviewView | undefined {
    return this.#pending?.view;
  }

  /** Called when a review starts or ends; returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  readonly reviewPlan: ReviewPlan = (review: PlanReview) =>
    new Promise<PlanReviewDecision>((resolve, reject) => {
      const view: ReviewView = {
        id: randomUUID(),
        kind: review.kind,
        ledger: review.ledger,
        replaced: [...(review.replaced ?? [])],
        reason: review.reason,
      };
      const done = () => {
        review.abortSignal.removeEventListener("abort", onAbort);
        if (this.#pending?.view === view) this.#pending = undefined;
        this.#changed();
      };
      const onAbort = () => {
        done();
        reject(new AbortedError("The review was withdrawn."));
      };
      if (review.abortSignal.aborted) return onAbort();
      review.abortSignal.addEventListener("abort", onAbort, { once: true });
      this.#pending = {
        view,
        maxSubTasks: this.maxSubTasks,
        resolve: (decision) => {
          done();
          resolve(decision);
        },
      };
      this.#changed();
    });

  answer(answer: PageAnswer): AnswerResult {
    const pending = this.#pending;
    if (!pending || pending.view.id !== answer.id)
      return { ok: false, status: 409, error: "This review was already answered." };
    if (answer.action === "approve") pending.resolve({ action: "approve" });
    else if (answer.action === "reject")
      pending.resolve({
        action: "reject",
        reason:
          typeof answer.reason === "string" && answer.reason
            ? answer.reason
            : "rejected on the page",
      });
    else if (answer.action === "edit") {
      try {
        const ledger = validateTaskLedger(answer.ledger, { maxSubTasks: pending.maxSubTasks });
        pending.resolve({ action: "edit", ledger });
      } catch (error) {
        const message = PlanValidationError.isInstance(error)
          ? error.message
          : error instanceof Error
            ? error.message
            : String(error);
        return { ok: false, status: 400, error: message };
      }
    } else return { ok: false, status: 400, error: "action must be approve, edit or reject" };
    return { ok: true };
  }

  #changed(): void {
    for (const listener of this.#listeners) {
      try {
        listener();
      } catch {
        // A listener's failure is the page's, not the run's.
      }
    }
  }
}

/**
 * The terminal and the page asked at once: the first answer wins and the other question is
 * withdrawn. Without a terminal reviewer, the page alone answers.
 */
export function firstAnswer(page: ReviewPlan, terminal: ReviewPlan | undefined): ReviewPlan {
  if (!terminal) return page;
  return async (review) => {
    const withdraw = new AbortController();
    const abortSignal = AbortSignal.any([review.abortSignal, withdraw.signal]);
    try {
      return await Promise.any([
        Promise.resolve(page({ ...review, abortSignal })),
        Promise.resolve(terminal({ ...review, abortSignal })),
      ]);
    } catch (error) {
      throw error instanceof AggregateError ? (error.errors[0] ?? error) : error;
    } finally {
      withdraw.abort();
    }
  };
}
