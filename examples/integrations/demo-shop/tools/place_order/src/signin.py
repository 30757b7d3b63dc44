"""Sign in to the Demo Shop: username and password, then a TOTP code, typed by the person on
the protected page. (Each tool version is a self-contained file tree, so tools that sign in
carry this file.)"""

from sitetools.sdk import Context, CredentialsRejected


async def sign_in(ctx: Context) -> None:
    login = await ctx.login("Sign in to the Demo Shop")
    response = await ctx.http.post(
        "/login", data={"username": login.username or "", "password": login.password or ""}
    )
    if response.status_code == 401:
        raise CredentialsRejected("password")
    code = await ctx.two_factor("totp", "Enter the 6-digit code from your authenticator app")
    response = await ctx.http.post("/login/verify", data={"code": code})
    if response.status_code == 401 or response.url.path != "/account/orders":
        raise CredentialsRejected("totp")
    ctx.progress("running", "Signed in")
