// The merchant cabinet page: sign-in, onboarding by invite, and the signed-in sections. It talks to
// /cabinet/api and the deposit endpoints with the session cookie (same origin: the browser sends the
// Origin the service checks). Built into dist/cabinet/app.js with the QR code library, with the
// modules it imports: the calls (api.js), the page's pieces (page.js), signing in and the
// signed-in frame (session.js), each section (sections/).
import { nav, whenSessionEnds } from "./page.js"
import { route, showCabinet, showInvite, showSignIn } from "./session.js"

whenSessionEnds(() => showSignIn("Your session ended: sign in again."))

window.addEventListener("hashchange", () => {
  if (!nav.hidden) route()
})

if (location.pathname === "/cabinet/invite" && location.hash.length > 1) showInvite(location.hash.slice(1))
else showCabinet()
