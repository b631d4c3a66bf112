/** The draft/review loop of SPEC section 2, with the review routed to the `review` role. */
export const reviewedLoop = {
  'draft.md': '---\ntype: start\n---\n# Draft\n\nWrite the draft.\n\n## Next\n- [[review]]\n',
  'review.md':
    '---\nrole: review\nmax_visits: 3\n---\n# Review\n\nApprove the draft, or say what must change.\n\n## Next\n- approved -> [[send]]\n- needs revision -> [[draft]]\n',
  'send.md': '# Send\n\nSend the approved draft.\n',
}
